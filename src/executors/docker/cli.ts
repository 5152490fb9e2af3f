/**
 * The docker CLI (or a compatible one, e.g. podman's), called through execa. Every call gets the
 * daemon's environment minus the runner's own secrets, plus DOCKER_HOST when `host` is set and
 * DOCKER_TLS_VERIFY / DOCKER_CERT_PATH when `[runners.docker] tls_verify` / `tls_cert_path` are.
 */
import { execa, type ResultPromise } from 'execa';
import { lastLine } from '../../util/command.js';
import { CiRunnerError } from '../../util/errors.js';

/** A docker command failed; the message carries the CLI's last error line. */
export class DockerCommandError extends CiRunnerError {
  constructor(
    message: string,
    readonly exitCode: number | undefined,
  ) {
    super('DOCKER_COMMAND_FAILED', message);
  }
}

/** The CLI's "Run 'docker run --help' for more information" after an error: the error is the line before. */
function withoutHelpHint(text: string | undefined): string {
  return (text ?? '').replace(/^Run '.*--help' for more information\.?\s*$/gm, '');
}

export interface DockerCliOptions {
  cli: string;
  host?: string;
  /** TLS to the engine: verify its certificate; the directory of ca.pem, cert.pem and key.pem. */
  tlsVerify?: boolean;
  certPath?: string;
  /** Told after each call ended (the job's timeline): its arguments, when it began, its exit code. */
  onCall?: (args: readonly string[], began: number, exitCode: number | undefined) => void;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Extra environment for this call (values passed as `-e NAME`, never on the command line). */
  env?: Record<string, string>;
}

export class DockerCli {
  constructor(private readonly options: DockerCliOptions) {}

  private env(extra: Record<string, string> = {}): Record<string, string | undefined> {
    const { host, tlsVerify, certPath } = this.options;
    return {
      ...extra,
      CI_SERVER_TOKEN: undefined,
      REGISTRATION_TOKEN: undefined,
      ...(host ? { DOCKER_HOST: host } : {}),
      ...(tlsVerify ? { DOCKER_TLS_VERIFY: '1' } : {}),
      ...(certPath ? { DOCKER_CERT_PATH: certPath } : {}),
    };
  }

  /** Runs `docker …args` to completion; resolves with stdout (trimmed); rejects with the CLI's error. */
  async run(args: string[], options: CallOptions = {}): Promise<string> {
    const began = performance.now();
    const result = await execa(this.options.cli, args, {
      env: this.env(options.env),
      stdin: 'ignore',
      reject: false,
      maxBuffer: 16 * 1024 * 1024,
      ...(options.signal ? { cancelSignal: options.signal } : {}),
    });
    this.options.onCall?.(args, began, result.exitCode);
    if (result.failed) {
      const detail = lastLine(withoutHelpHint(result.stderr)) || lastLine(result.stdout) || result.shortMessage;
      throw new DockerCommandError(`${this.options.cli} ${args[0] ?? ''}: ${detail}`, result.exitCode);
    }
    return result.stdout.trim();
  }

  /**
   * Starts `docker …args` streaming (stdout and stderr not buffered). Aborting `signal` stops the CLI
   * (SIGTERM, SIGKILL 5 s later) and the result says `isCanceled`.
   */
  spawn(args: string[], options: CallOptions = {}): ResultPromise<{ buffer: false; reject: false; stdin: 'ignore' }> {
    const began = performance.now();
    const child = execa(this.options.cli, args, {
      env: this.env(options.env),
      stdin: 'ignore',
      buffer: false,
      reject: false,
      ...(options.signal ? { cancelSignal: options.signal } : {}),
    });
    const onCall = this.options.onCall;
    // reject: false, so this never rejects; the caller awaits the same result.
    if (onCall) void child.then((result) => onCall(args, began, result.exitCode));
    return child;
  }

  get name(): string {
    return this.options.cli;
  }

  /** Which engine the calls reach: the CLI and its DOCKER_HOST (the daemon's own when unset). */
  get engine(): string {
    return `${this.options.cli}\u0000${this.options.host ?? process.env.DOCKER_HOST ?? ''}`;
  }
}
