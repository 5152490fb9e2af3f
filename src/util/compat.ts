/**
 * How ci-runner treats one name of GitLab Runner's (a config.toml key, a command-line flag, a control
 * variable, an `info.features` entry, a stage, a metric): every compatibility table in the code gives
 * each of its entries one of these, and the config loader, the CLI, the job and docs/compatibility.md
 * all read the same tables, so a name can neither be ignored silently nor documented wrongly.
 *
 * - `honoured`: it does here what it does in GitLab Runner; `note` says how, where that differs in
 *   detail or where the code that honours it is not obvious.
 * - `warned`: accepted, with one warning that names it and gives `reason` (it has no meaning here).
 * - `refused`: the whole input is refused with `reason` (it asks for something ci-runner cannot do,
 *   and doing anything else would be worse than stopping).
 */
export type Support =
  | { readonly status: 'honoured'; readonly note?: string }
  | { readonly status: 'warned'; readonly reason: string }
  | { readonly status: 'refused'; readonly reason: string };

export type SupportStatus = Support['status'];

export const honoured = (note?: string): Support => (note === undefined ? { status: 'honoured' } : { status: 'honoured', note });
export const warned = (reason: string): Support => ({ status: 'warned', reason });
export const refused = (reason: string): Support => ({ status: 'refused', reason });
