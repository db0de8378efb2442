// zod for every schema of ours is its tree-shakable "mini" API (#43: the classic API cost each
// process ~5 MB resident, the parts of the mini one we use ~0.5 MB). Importing this module gives
// the messages the classic API has (English). Import `* as z from 'zod/mini'` where it is used:
// a namespace re-exported from here would keep all of zod in the bundle.
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());
