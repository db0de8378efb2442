// Per-pod tuning annotations: their kernel ranges, validation, and the resolved settings
// document the webhook writes for the CNI plugin (SETTINGS_ANNOTATION).
// Ranges follow Documentation/networking/smc-sysctl.rst and net/smc/smc_sysctl.c.
import { SETTINGS_VERSION, TUNING_ANNOTATIONS } from '../constants.js';
import type { PolicyConfig, TuningConfig } from '../config/schema.js';
import { parseGoBool } from './parse-bool.js';
import { clip } from '../util/text.js';

export interface Knob {
  readonly field: keyof TuningConfig;
  readonly annotation: string;
  readonly sysctl: string;
  readonly min: number;
  readonly max: number;
  /** Extra words for the message, e.g. units. */
  readonly unit: string;
  /** Above this the kernel caps the value for SMC-R: warn. */
  readonly softMax?: number;
}

/** SMC_BUF_MIN_SIZE (16 KiB) up to INT_MAX/2, as smc_sysctl.c bounds wmem and rmem. */
const BUF_MIN = 16_384;
const BUF_MAX = 1_073_741_823;
/** SMC-R uses at most 512 KiB buffers whatever the sysctl says. */
const SMCR_BUF_CAP = 524_288;

export const KNOBS: readonly Knob[] = [
  {
    field: 'wmem',
    annotation: TUNING_ANNOTATIONS.wmem,
    sysctl: 'net.smc.wmem',
    min: BUF_MIN,
    max: BUF_MAX,
    unit: 'bytes',
    softMax: SMCR_BUF_CAP,
  },
  {
    field: 'rmem',
    annotation: TUNING_ANNOTATIONS.rmem,
    sysctl: 'net.smc.rmem',
    min: BUF_MIN,
    max: BUF_MAX,
    unit: 'bytes',
    softMax: SMCR_BUF_CAP,
  },
  {
    field: 'autocorkingSize',
    annotation: TUNING_ANNOTATIONS.autocorkingSize,
    sysctl: 'net.smc.autocorking_size',
    min: 0,
    max: 4_294_967_295,
    unit: 'bytes (0 turns auto-corking off)',
  },
  {
    field: 'bufType',
    annotation: TUNING_ANNOTATIONS.bufType,
    sysctl: 'net.smc.smcr_buf_type',
    min: 0,
    max: 2,
    unit: '(0 physically contiguous, 1 virtually contiguous, 2 mixed)',
  },
  // proc_dointvec_jiffies: seconds times HZ (up to 1000) must fit an int.
  {
    field: 'testlinkTime',
    annotation: TUNING_ANNOTATIONS.testlinkTime,
    sysctl: 'net.smc.smcr_testlink_time',
    min: 0,
    max: 2_147_483,
    unit: 'seconds (0 turns TEST_LINK off)',
  },
];

export const TCP2SMC_SYSCTL = 'net.smc.tcp2smc';
export const DISABLE_IPV6_SYSCTLS = [
  'net.ipv6.conf.all.disable_ipv6',
  'net.ipv6.conf.default.disable_ipv6',
];

export interface TuningProblem {
  readonly annotation: string;
  readonly message: string;
}

export interface ResolvedTuning {
  readonly values: Partial<Record<keyof TuningConfig, number>>;
  readonly keepIPv6: boolean;
  readonly problems: readonly TuningProblem[];
  readonly warnings: readonly string[];
}

function checkKnob(
  knob: Knob,
  raw: string,
): { value?: number; problem?: string; warning?: string } {
  if (!/^\d{1,10}$/.test(raw)) {
    return {
      problem: `must be a whole number of ${knob.unit} between ${knob.min} and ${knob.max}, got "${clip(raw, 64)}"`,
    };
  }
  const value = Number(raw);
  if (value < knob.min || value > knob.max) {
    return {
      problem: `${value} is outside ${knob.min}..${knob.max} ${knob.unit} (${knob.sysctl})`,
    };
  }
  const warning =
    knob.softMax !== undefined && value > knob.softMax
      ? `${knob.annotation}=${value}: SMC-R uses at most ${knob.softMax} bytes; larger values are capped by the kernel`
      : undefined;
  return { value, warning };
}

/** Reads and validates the tuning annotations over the configured defaults. */
export function resolveTuning(
  annotations: Readonly<Record<string, string>>,
  config: PolicyConfig,
): ResolvedTuning {
  const values: Partial<Record<keyof TuningConfig, number>> = {};
  const problems: TuningProblem[] = [];
  const warnings: string[] = [];
  for (const knob of KNOBS) {
    const fallback = config.defaultTuning[knob.field];
    if (fallback !== undefined) values[knob.field] = fallback;
    const raw = annotations[knob.annotation];
    if (raw === undefined) continue;
    const r = checkKnob(knob, raw);
    if (r.problem) problems.push({ annotation: knob.annotation, message: r.problem });
    else if (r.value !== undefined) values[knob.field] = r.value;
    if (r.warning) warnings.push(r.warning);
  }
  let keepIPv6 = !config.disableIPv6;
  const rawKeep = annotations[TUNING_ANNOTATIONS.keepIPv6];
  if (rawKeep !== undefined) {
    const parsed = parseGoBool(rawKeep);
    if (parsed === undefined) {
      problems.push({
        annotation: TUNING_ANNOTATIONS.keepIPv6,
        message: `must be "true" or "false", got "${clip(rawKeep, 64)}"`,
      });
    } else keepIPv6 = parsed;
  }
  return { values, keepIPv6, problems, warnings };
}

/** The settings document for the CNI plugin: sysctl name → decimal value, keys sorted. */
export interface SettingsDocument {
  readonly version: number;
  readonly sysctls: Readonly<Record<string, string>>;
  /** The pod's SMC selection (selection.ts), for the smc_hs_ctrl program; absent: every connection. */
  readonly select?: string;
}

export function settingsDocument(t: ResolvedTuning, select?: string): SettingsDocument {
  const sysctls: Record<string, string> = { [TCP2SMC_SYSCTL]: '1' };
  for (const knob of KNOBS) {
    const v = t.values[knob.field];
    if (v !== undefined) sysctls[knob.sysctl] = String(v);
  }
  if (!t.keepIPv6) for (const s of DISABLE_IPV6_SYSCTLS) sysctls[s] = '1';
  const sorted = Object.fromEntries(Object.entries(sysctls).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { version: SETTINGS_VERSION, sysctls: sorted, ...(select ? { select } : {}) };
}

/** Serialised form written into the annotation (stable, so re-running the webhook changes nothing). */
export function serializeSettings(doc: SettingsDocument): string {
  return JSON.stringify(doc);
}

/** Annotation values already serialised, by tuning (a workload's pods share theirs); bounded. */
const serialised = new Map<string, string>();
const SERIALISED_MAX = 256;

/** serializeSettings(settingsDocument(t, select)), remembered: the same input gives the same string. */
export function settingsAnnotation(t: ResolvedTuning, select?: string): string {
  let key = `${select ?? ''}|${t.keepIPv6 ? '6' : '4'}`;
  for (const knob of KNOBS) key += `,${t.values[knob.field] ?? ''}`;
  let value = serialised.get(key);
  if (value === undefined) {
    if (serialised.size >= SERIALISED_MAX) serialised.clear();
    value = serializeSettings(settingsDocument(t, select));
    serialised.set(key, value);
  }
  return value;
}
