// Tools for end-to-end tests: results of a size and shape the test chooses,
// unlike pi's own tools, which truncate their output.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import * as fs from "node:fs";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "dump_file",
		label: "Dump file",
		description: "Return the whole content of a file, however large, as one text block.",
		parameters: Type.Object({ path: Type.String() }),
		async execute(_id, params) {
			return { content: [{ type: "text", text: fs.readFileSync(params.path, "utf8") }], details: {} };
		},
	});
}
