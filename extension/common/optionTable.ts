// Generated from python_backend/quickdev/rundir/option_table.py by tools/option_table.py (make options):
// do not edit; tests/test_option_table.py fails when it is stale.

/** The limits a launch configuration, and so quickdev.startJob, may give a job. */
export interface LimitArguments {
  /** Batches per DataLoader pass (`--batches`). */
  batches?: number;
  /** Stop after this many training steps (`--max-steps`). */
  maxSteps?: number;
  /** Stop after this many seconds of wall-clock time (`--timeout`). */
  timeout?: number;
}

export const LIMIT_ARGUMENTS = {
  batches: "optional",
  maxSteps: "optional",
  timeout: "optional",
} as const;

/** The limits the `quickdev.*` settings give every job. */
export interface LimitSettings {
  /** Batches per DataLoader pass (`--batches`). */
  batches: number;
  /** A DataLoader's full-size step estimated above this on this CPU computes at a smaller batch from the same loader, its full size checked on fake tensors (`--step-seconds`). */
  stepSeconds: number;
}

/** Each setting's type, as package.json declares it. */
export const LIMIT_SETTINGS = {
  batches: "integer",
  stepSeconds: "number",
} as const;
