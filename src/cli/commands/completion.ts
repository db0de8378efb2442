// `erdma-smcr completion bash`: a bash completion script made from the command line itself (its
// commands, their aliases, options, option choices and subcommands), so it never lags behind a
// new flag.
//   source <(erdma-smcr completion bash)
// What it offers, by position: a command; after an option that takes a value, that option's
// choices (formats, log levels), else files; a word that starts with `-`, the command's options;
// otherwise the command's subcommands or positional words (rule ids for `rules`/`explain`), else
// files (`check <TAB>`).
import type { Command, Option } from 'commander';
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';

const flags = (o: Option): string[] => [o.long, o.short].filter((f): f is string => !!f);
const longs = (c: Command): string[] => c.options.flatMap(flags);
const takesValue = (o: Option): boolean => o.required || o.optional;
/** A value that names a file or directory (`<file>`, `<dir>`, `<kubeconfig>`, `<glob>`...). */
const isPath = (o: Option): boolean =>
  /<[^>]*(file|dir|path|config|glob|root)[^>]*>/i.test(o.flags);

/** bash `case` arms for "COMMAND PREV": the option's choices, else files. `*` for every command. */
function valueArms(cmd: string, options: readonly Option[]): string[] {
  return options.filter(takesValue).map((o) => {
    const pattern = flags(o)
      .map((f) => `"${cmd === '*' ? '' : cmd} ${f}"`.replace(/^"/, cmd === '*' ? '*"' : '"'))
      .join('|');
    const reply = o.argChoices
      ? `COMPREPLY=($(compgen -W "${o.argChoices.join(' ')}" -- "$cur"))`
      : isPath(o)
        ? 'COMPREPLY=($(compgen -f -- "$cur"))'
        : 'compopt +o default 2>/dev/null; COMPREPLY=()'; // a number, a name: nothing to offer
    return `    ${pattern}) ${reply}; return ;;`;
  });
}

/**
 * The script. `positional` gives the words a command's first argument may be (by command name),
 * where those are known when the script is made.
 */
export function bashCompletion(
  program: Command,
  positional: Readonly<Record<string, readonly string[]>> = {},
): string {
  const commands = program.commands.filter((c) => c.name() !== 'help');
  const names = commands.flatMap((c) => [c.name(), ...c.aliases()]);
  const global = [...longs(program), '--help'].join(' ');
  const valued = [
    ...new Set([program, ...commands].flatMap((c) => c.options.filter(takesValue).flatMap(flags))),
  ];
  const arms = [
    ...commands.flatMap((c) =>
      [c.name(), ...c.aliases()].flatMap((n) =>
        valueArms(n, [...c.options, ...c.commands.flatMap((s) => s.options)]),
      ),
    ),
    ...valueArms('*', program.options),
  ].join('\n');
  const cases = commands
    .map((c) => {
      const opts = [...longs(c), ...c.commands.flatMap(longs), '--help'].join(' ');
      const args = c.commands.length
        ? c.commands.map((s) => s.name())
        : (positional[c.name()] ?? []);
      return `    ${[c.name(), ...c.aliases()].join('|')}) opts="${opts}"; args="${args.join(' ')}"; nested=${c.commands.length ? 1 : 0} ;;`;
    })
    .join('\n');
  return `# bash completion for erdma-smcr: source <(erdma-smcr completion bash)
_erdma_smcr() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmd="" opts="" args="" nested=0 n=0 i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in
      ${valued.join('|')}) ((i++)) ;;
      -*) ;;
      *) if [ -z "$cmd" ]; then cmd=\${COMP_WORDS[i]}; else ((n++)); fi ;;
    esac
  done
  case "$cmd $prev" in
${arms}
  esac
  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W "${names.join(' ')} ${global}" -- "$cur"))
    return
  fi
  case $cmd in
${cases}
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts ${global}" -- "$cur"))
  elif [[ -n $args && ( $nested == 0 || $n == 0 ) && $cur != */* && $cur != .* ]]; then
    COMPREPLY=($(compgen -W "$args" -- "$cur"))
  fi
  [ \${#COMPREPLY[@]} -gt 0 ] || COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o default -F _erdma_smcr erdma-smcr erdma-smcr.js
`;
}

export function completionCommand({ program, io, setCode }: CommandContext): void {
  program
    .command('completion')
    .description('print a shell completion script: source <(erdma-smcr completion bash)')
    .argument('<shell>', 'bash')
    .action(async (shell: string) => {
      if (shell !== 'bash')
        throw new AppError(
          'USAGE',
          `completion for "${shell}" is not made; bash is (source <(erdma-smcr completion bash))`,
        );
      const { RULE_CATALOGUE } = await import('../../policy/catalogue.js');
      const rules = RULE_CATALOGUE.map((r) => r.id);
      io.out(bashCompletion(program, { rules, completion: ['bash'] }));
      setCode(0);
    });
}
