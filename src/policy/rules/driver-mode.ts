// driver-mode: SMC-R works only when the eRDMA driver runs in its default mode.
import { SMCR_ANNOTATION } from '../../constants.js';
import { annotationPath, deny, none, type Rule } from './rule.js';

export const driverMode: Rule = {
  id: 'driver-mode',
  scope: 'smcr',
  when: "the cluster's eRDMA driver runs in `compat` or `ofed` mode",
  fix: 'switch the driver to `default`',
  example: 'examples/compat-cluster/driver-mode.yaml',
  check: (ctx) => {
    const mode = ctx.view.driverMode;
    if (mode === undefined || mode === 'default') return none();
    return deny(
      'driver-mode',
      annotationPath(ctx),
      `the cluster's eRDMA driver runs in "${mode}" mode, and SMC-R works only in "default" mode. ` +
        `Ask the cluster admin to switch the eRDMA driver to "default" on the nodes that run this pod ` +
        `(on ACK, the eRDMA controller's preferDriver setting), or remove the ${SMCR_ANNOTATION} annotation.`,
    );
  },
};
