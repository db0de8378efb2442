// `erdma-smcr completion bash`: a bash completion script made from the command line itself (its
// commands, their aliases and options), so it never lags behind a new flag.
//   source <(erdma-smcr completion bash)
import type { Command } from 'commander';
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';

const longs = (c: Command): string[] =>
  c.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => typeof f === 'string');

/** The script: subcommands first, then each subcommand's options (and the global ones), else files. */
export function bashCompletion(program: Command): string {
  const commands = program.commands.filter((c) => c.name() !== 'help');
  const names = commands.flatMap((c) => [c.name(), ...c.aliases()]);
  const global = [...longs(program), '--help'].join(' ');
  const cases = commands
    .map((c) => {
      const sub = c.commands.map((s) => s.name());
      const opts = [...longs(c), ...c.commands.flatMap(longs), '--help'].join(' ');
      return `    ${[c.name(), ...c.aliases()].join('|')}) words="${[...sub, opts].join(' ').trim()}" ;;`;
    })
    .join('\n');
  return `# bash completion for erdma-smcr: source <(erdma-smcr completion bash)
_erdma_smcr() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd="" words="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in -*) ;; *) cmd=\${COMP_WORDS[i]}; break ;; esac
  done
  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W "${names.join(' ')} ${global}" -- "$cur"))
    return
  fi
  case $cmd in
${cases}
  esac
  if [[ $cur == -* || -n $words && $cur != */* && $cur != .* ]]; then
    COMPREPLY=($(compgen -W "$words ${global}" -- "$cur"))
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
    .action((shell: string) => {
      if (shell !== 'bash')
        throw new AppError(
          'USAGE',
          `completion for "${shell}" is not made; bash is (source <(erdma-smcr completion bash))`,
        );
      io.out(bashCompletion(program));
      setCode(0);
    });
}
