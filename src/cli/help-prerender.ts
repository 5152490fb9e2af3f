/**
 * yargs renders a command's whole help text just before running its handler, only to keep it for a
 * `showHelp()` from inside the handler, which we never call (`fail` rethrows handler errors, and
 * usage errors are found before any handler runs). For a command with many options (`exec`,
 * `run-once`, `register`) the layout costs 50–60 ms of CPU on every start. This turns that one
 * step off; with a yargs that no longer has it, nothing changes.
 */
import type { Argv } from 'yargs';

interface UsageInternals {
  cacheHelpMessage?: () => void;
}

export function skipHelpPrerender(program: Argv<unknown>): void {
  const internal = program as unknown as { getInternalMethods?: () => { getUsageInstance?: () => UsageInternals } };
  const usage = internal.getInternalMethods?.().getUsageInstance?.();
  if (usage && typeof usage.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => undefined;
}
