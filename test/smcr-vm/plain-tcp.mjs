// The agent's reading of which programs of a pod hold plain TCP connections, and why
// (dist/agent/observe/programs.js, copied as built), over the VM's real processes: one JSON line.
import { plainTcpPrograms } from './observe/programs.js';

console.log(JSON.stringify(plainTcpPrograms('/proc', process.argv[2])));
