// The one catalogue of errors with stable codes; docs/errors.md is kept in sync by a test.

export interface ErrorSpec {
  /** HTTP status when the error reaches an HTTP caller. */
  readonly status: number;
  /** Process exit code when the error ends a CLI command. */
  readonly exit: number;
  /** One line for the docs: when it happens. */
  readonly doc: string;
}

export const ERRORS = {
  USAGE: { status: 400, exit: 2, doc: 'A command was called with wrong flags or arguments.' },
  CONFIG_INVALID: {
    status: 500,
    exit: 2,
    doc: 'The configuration (file, environment or flags) does not pass the schema.',
  },
  INPUT_UNREADABLE: { status: 400, exit: 2, doc: 'An input file or directory cannot be read.' },
  INPUT_NOT_OBJECT: {
    status: 400,
    exit: 2,
    doc: 'A document is not a Kubernetes object (no apiVersion and kind), with `check --not-objects error`; skipped with a note otherwise.',
  },
  NOTHING_TO_CHECK: {
    status: 400,
    exit: 2,
    doc: '`check` found no Kubernetes object in a path (an empty or mistyped directory, an empty stdin).',
  },
  INPUT_PARSE: {
    status: 400,
    exit: 2,
    doc: 'An input is not valid YAML or JSON; the message names file and line.',
  },
  PROFILE_INVALID: { status: 500, exit: 2, doc: 'The cluster profile or node list is malformed.' },
  REVIEW_NOT_JSON: { status: 400, exit: 2, doc: 'The request body is not JSON.' },
  REVIEW_INVALID: {
    status: 400,
    exit: 2,
    doc: 'The body is not an admission.k8s.io/v1 AdmissionReview with a request and a uid.',
  },
  REVIEW_UNSUPPORTED_KIND: {
    status: 400,
    exit: 2,
    doc: 'The reviewed object is of a kind this endpoint does not handle.',
  },
  BODY_TOO_LARGE: { status: 413, exit: 2, doc: 'The request body exceeds the configured limit.' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    exit: 2,
    doc: 'The request body is not application/json.',
  },
  NOT_FOUND: { status: 404, exit: 2, doc: 'No route for this method and path.' },
  CERTS_UNAVAILABLE: {
    status: 503,
    exit: 1,
    doc: 'The serving certificate cannot be loaded or generated.',
  },
  KUBE_UNAVAILABLE: {
    status: 503,
    exit: 1,
    doc: 'No usable kubeconfig or in-cluster service account, or the API server cannot be reached.',
  },
  CERTS_BOOTSTRAP: {
    status: 503,
    exit: 1,
    doc: 'The certificate Secret or the caBundle cannot be ensured (RBAC, conflicts that do not settle).',
  },
  LISTEN_FAILED: {
    status: 500,
    exit: 1,
    doc: 'A port cannot be opened (in use, an address the host lacks, no permission); the message names the setting.',
  },
  START_FAILED: {
    status: 500,
    exit: 1,
    doc: 'A process could not start (a host path it needs is missing, not writable, or a file where a directory should be; its socket cannot be served); nothing is left running or behind.',
  },
  INTERNAL: { status: 500, exit: 1, doc: 'An unexpected failure; details go to the log only.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * The commands whose exit code is a verdict (0 allowed, 1 denied, 3 warnings with --fail-on-warn):
 * an error that would end another command with 1 ends these with 4, so that a failure of the
 * command never reads as "denied" (#80).
 */
export const VERDICT_COMMANDS: readonly string[] = ['check', 'review'];
export const VERDICT_FAILURE_EXIT = 4;

/** The exit code of an error ending `command`. */
export function exitFor(code: ErrorCode, command: string | undefined): number {
  const exit = ERRORS[code].exit;
  return exit === 1 && command !== undefined && VERDICT_COMMANDS.includes(command)
    ? VERDICT_FAILURE_EXIT
    : exit;
}

/** An error with a stable code from the catalogue. Its message is safe to show to the caller. */
/**
 * Gives a class its name for good: the shipped bundle is minified without keeping names, and pino
 * logs an error's constructor name as its `type`.
 */
export function named<T extends abstract new (...args: never[]) => unknown>(
  cls: T,
  name: string,
): T {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
  }
  get status(): number {
    return ERRORS[this.code].status;
  }
  get exitCode(): number {
    return ERRORS[this.code].exit;
  }
}
named(AppError, 'AppError');

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
