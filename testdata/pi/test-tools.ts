// Tools for end-to-end tests: results of a size and shape the test chooses,
// unlike pi's own tools, which truncate their output.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import * as fs from "node:fs";

// TOOL_TIMING names a file that gets one JSON line per tool call: how long
// pi's tool_result hooks took, from the end of execute to
// tool_execution_end (for benchmarks of pi-session's hook).
const timing = process.env.TOOL_TIMING;
const executed = new Map<string, number>();

export default function (pi: ExtensionAPI) {
	if (timing) {
		pi.on("tool_execution_end", (event) => {
			const t0 = executed.get(event.toolCallId);
			if (t0 !== undefined) fs.appendFileSync(timing, JSON.stringify({ tool: event.toolName, hookMs: performance.now() - t0 }) + "\n");
		});
	}
	pi.registerTool({
		name: "dump_file",
		label: "Dump file",
		description: "Return the whole content of a file, however large, as one text block.",
		parameters: Type.Object({ path: Type.String() }),
		async execute(id, params) {
			const text = fs.readFileSync(params.path, "utf8");
			executed.set(id, performance.now());
			return { content: [{ type: "text", text }], details: {} };
		},
	});
}
