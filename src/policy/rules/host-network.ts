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
  check: (ctx) => {
    const v = ctx.loc.spec.hostNetwork;
    const path = `${ctx.loc.prefix}spec.hostNetwork`;
    if (v === true)
      return deny(
        'host-network',
        path,
        'SMC-R cannot be enabled for a hostNetwork pod: it would switch every TCP socket of the node to SMC. ' +
          `Remove hostNetwork: true, or remove the ${SMCR_ANNOTATION} annotation.`,
      );
    // The API server refuses a non-boolean (`hostNetwork: "true"`); `check` must not pass it (#80).
    if (v !== undefined && v !== null && v !== false)
      return deny(
        'host-network',
        path,
        `hostNetwork must be true or false, not ${JSON.stringify(v)}: the API server refuses the object. Write hostNetwork: false (or drop it), and no hostNetwork pod can have SMC-R.`,
      );
    return none();
  },
};
