// host-network: hostNetwork pods share the host's network namespace, so switching their
// sockets would switch every TCP socket of the node.
import { SMCR_ANNOTATION } from '../../constants.js';
import { deny, none, type Rule } from './rule.js';

export const hostNetwork: Rule = {
  id: 'host-network',
  scope: 'smcr',
  when: '`hostNetwork: true`: `tcp2smc` would switch every socket of the node',
  fix: 'drop hostNetwork or the annotation',
  example: 'examples/invalid/host-network.yaml',
  check: (ctx) =>
    ctx.loc.spec.hostNetwork === true
      ? deny(
          'host-network',
          `${ctx.loc.prefix}spec.hostNetwork`,
          'SMC-R cannot be enabled for a hostNetwork pod: it would switch every TCP socket of the node to SMC. ' +
            `Remove hostNetwork: true, or remove the ${SMCR_ANNOTATION} annotation.`,
        )
      : none(),
};
