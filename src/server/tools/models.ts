/* shadow_models: configured models by name, where each points, and whether this project may reach remote ones; no credential values, no probe. */
import { listModels } from '../../engine/models.js';
import { getProject } from '../../store/projects.js';
import { READ_ONLY, type ToolDef } from './types.js';

export const shadowModels: ToolDef = {
  name: 'shadow_models',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_models',
  run(conn) {
    const s = conn.engine.settings();
    return {
      models: listModels(s, conn.engine.env, conn.engine.secrets()),
      default_model: s.default_model ?? null,
      network: getProject(conn.engine.db(), conn.project).network,
    };
  },
};
