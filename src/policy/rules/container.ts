// container: smcr.erdma.io/container must name a container of the pod, or a native sidecar (an
// init container with restartPolicy: Always, which runs beside the app for the pod's whole life).
import { CONTAINER_ANNOTATION } from '../../constants.js';
import { arrayOf, isObject } from '../../util/json.js';
import { clip } from '../../util/text.js';
import { annotationPath, deny, none, type Rule } from './rule.js';

export const container: Rule = {
  id: 'container',
  scope: 'smcr',
  when: '`smcr.erdma.io/container` names no container of the pod',
  fix: 'name an existing container',
  example: 'examples/invalid/container-missing.yaml',
  check: (ctx) => {
    const name = ctx.annotations[CONTAINER_ANNOTATION];
    if (name === undefined) return none();
    const names = [
      ...arrayOf(ctx.loc.spec.containers).map((c) => (isObject(c) ? c.name : undefined)),
      ...arrayOf(ctx.loc.spec.initContainers)
        .filter((c) => isObject(c) && c.restartPolicy === 'Always')
        .map((c) => (isObject(c) ? c.name : undefined)),
    ];
    if (names.includes(name)) return none();
    return deny(
      'container',
      annotationPath(ctx, CONTAINER_ANNOTATION),
      `${CONTAINER_ANNOTATION} names container "${clip(name, 64)}", which the pod does not have (containers and native sidecars: ${clip(names.join(', '), 253) || 'none'}).`,
    );
  },
};
