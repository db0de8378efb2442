// Runs inside the SMC-R VM as the node agent's driver duty would (agent.manageDriver with
// preferDriver default): the agent's own code (dist/agent/node/driver.js and what it imports, copied into /agent) with
// the VM's real modprobe (kmod, over a depmod'ed /lib/modules). There is no erdma module in the VM,
// so loading it fails; smc must still be loaded, by this code path. Prints one SMCRVM line.
import { reconcileDriver } from '/agent/node/driver.js';

const log = [];
const logger = { info: (_o, m) => log.push(m), warn: (_o, m) => log.push(m) };
const r = await reconcileDriver({
  prefer: 'default',
  hostRoot: '/',
  procRoot: '/proc',
  modprobe: ['/usr/sbin/modprobe'],
  logger,
});
const done = r.done.map((d) => `${d.action.args.join('_')}:${d.error ? 'failed' : 'ok'}`).join(',');
const errors = r.done
  .filter((d) => d.error)
  .map((d) => d.error.replace(/\s+/g, ' '))
  .join('; ');
console.log(
  `SMCRVM agent_driver_status=${r.decision.status} agent_driver_done=${done} agent_smc_loaded=${r.facts.smcLoaded} agent_driver_errors="${errors.replace(/"/g, "'")}"`,
);
