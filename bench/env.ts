/**
 * The environment the benches start our servers and daemons in, and their baselines: PATH and what
 * the caller gives, nothing else of the shell that runs `npm run bench`. A pod starts with the
 * image's and its manifest's variables only, and Node reads some variables at start that change
 * what a process holds: this machine sets NODE_EXTRA_CA_CERTS to its whole CA bundle, which Node 20
 * parses at start-up (1.8 MB resident in a bare `node`) and Node 26 when tls loads (#43).
 */
export function podEnv(vars: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...vars };
}
