/** What every page of the app is, and the loop that keeps one up to date without piling up requests. */
import { ApiError } from './api.js';
import { h, replace } from './dom.js';

export interface Page {
  /** Fetch again and redraw (a change was announced). */
  refresh(): void;
  /** The page is left: close its streams and timers. */
  dispose(): void;
}

/** Goes to another page without a reload (set by main.ts; a plain load until then). */
export const nav = { go: (path: string): void => location.assign(path) };

/**
 * A page that draws what `load` fetched. Refreshes never overlap: one asked for while a load runs
 * happens once, after it. A failed load shows its message in place of the page.
 */
export function loadingPage<T>(app: HTMLElement, load: (signal: AbortSignal) => Promise<T>, draw: (data: T) => void, extra?: () => void): Page {
  const controller = new AbortController();
  let running = false;
  let again = false;
  const run = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        try {
          const data = await load(controller.signal);
          if (!controller.signal.aborted) draw(data);
        } catch (error) {
          if (controller.signal.aborted) return;
          const message = error instanceof ApiError && error.status === 404 ? 'Not found.' : `Could not load this page: ${(error as Error).message}`;
          replace(app, h('p', { class: 'error', role: 'alert' }, message), h('p', {}, h('a', { href: '/' }, 'Back to the pipelines')));
        }
      } while (again && !controller.signal.aborted);
    } finally {
      running = false;
    }
  };
  void run();
  return {
    refresh: () => void run(),
    dispose: () => {
      controller.abort();
      extra?.();
    },
  };
}

/** A button that runs `action`, disabled while it runs; a failure is shown next to it. */
export function actionButton(label: string, className: string, action: () => Promise<unknown>, attrs: Record<string, string> = {}): HTMLButtonElement {
  const button = h('button', { type: 'button', class: className, ...attrs }, label);
  button.addEventListener('click', () => {
    button.disabled = true;
    action()
      .catch((error: unknown) => {
        const note = h('span', { class: 'error inline', role: 'alert' }, (error as Error).message);
        button.after(note);
        setTimeout(() => note.remove(), 8000);
      })
      .finally(() => {
        button.disabled = false;
      });
  });
  return button;
}
