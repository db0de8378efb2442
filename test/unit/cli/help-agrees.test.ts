// What `--help` says of the agent agrees with the manifests and the docs (#80 item 5): whether the
// agent serves the device plugin, and what `agent --uninstall` removes.
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { agentSchema } from '../../../src/config/schema.js';

type Container = { env?: { name: string; value?: string }[] };

describe('the agent as --help, the manifests and the docs describe it', () => {
  it('the device plugin: the agent serves none by default, as the DaemonSet ships it; --help names the variable and its own DaemonSet', async () => {
    const agent = (
      yaml.loadAll(readFileSync('manifests/base/agent.yaml', 'utf8')) as {
        kind: string;
        spec: { template: { spec: { containers: Container[] } } };
      }[]
    ).find((d) => d.kind === 'DaemonSet')!;
    // The default is what ships (#94 item 5): the manifest needs no variable to switch it off.
    const env = agent.spec.template.spec.containers[0]!.env ?? [];
    expect(env.find((e) => e.name === 'ERDMA_SMCR_AGENT_DEVICE_PLUGIN')).toBeUndefined();
    expect(agentSchema.parse({}).devicePlugin).toBe(false);
    const help = (await runCli(['agent', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('ERDMA_SMCR_AGENT_DEVICE_PLUGIN=true; off by default');
    expect(help).toMatch(/device-plugin. in a DaemonSet of its own/);
  });

  it('agent --uninstall: --help, the README and docs/agent.md name the same four things', async () => {
    const help = (await runCli(['agent', '--help'])).stdout.replace(/\s+/g, ' ');
    const readme = readFileSync('README.md', 'utf8');
    const agentDoc = readFileSync('docs/agent.md', 'utf8').replace(/\s+/g, ' ');
    const readmeLine = readme.split('\n').find((l) => l.includes('agent --uninstall'))!;
    for (const [what, said] of [
      ['CNI entry', /CNI entry|entry from every conflist/],
      ['binary', /binary/],
      ['preload library', /preload library/],
      ['BPF pins', /BPF pins|IPPROTO_SMC pins/],
    ] as const) {
      expect(help, `--help: ${what}`).toMatch(said);
      expect(readmeLine, `README: ${what}`).toMatch(said);
      expect(
        agentDoc.slice(agentDoc.indexOf('`erdma-smcr agent --uninstall`')).slice(0, 500),
        `docs/agent.md: ${what}`,
      ).toMatch(said);
    }
  });
});
