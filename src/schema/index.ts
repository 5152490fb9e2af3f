/** Our zod-like validator as one namespace: `import { z } from '…/schema/index.js'` (see base.ts for why). */
export * as z from './z.js';
