/* shadow_models: configured models by name; no credential values. */
import { listModels } from '../../engine/models.js';
import { READ_ONLY, type ToolDef } from './types.js';

export const shadowModels: ToolDef = {
  name: 'shadow_models',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_models',
  run(conn) {
    const s = conn.engine.settings();
    return { models: listModels(s, conn.engine.env, conn.engine.secrets()), default_model: s.default_model ?? null };
  },
};
