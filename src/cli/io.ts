/**
 * The process surface a command touches, passed in so tests and the program share one path:
 * output streams (and whether they are terminals) and the environment.
 */
export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** stdout is a terminal: tables by default. */
  readonly stdoutIsTty: boolean;
  /** stderr is a terminal: progress indicators and prompts may be shown. */
  readonly stderrIsTty: boolean;
  readonly env: NodeJS.ProcessEnv;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  stdoutIsTty: process.stdout.isTTY === true,
  stderrIsTty: process.stderr.isTTY === true,
  env: process.env,
};
