/** claude: what the CLI needs before its first run (docs/agent-clis.md). */
import { type CliSetup, type CliSetupInput, NO_SETUP } from "./types.js";

export function claudeSetup(_input: CliSetupInput): CliSetup {
  return NO_SETUP;
}
