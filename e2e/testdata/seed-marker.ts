// A relaunch-marker writer as an extension written for the seed's wrapper
// would do it: it trusts the assignment only when it is its own
// (PI_SESSION_WRAPPER_PID is its parent, and the marker is named
// <PI_SESSION_WRAPPER_PID>-<PI_SESSION_LAUNCH_ID>.json), and then writes the
// marker itself, in the seed's format (no launchId).
//
// SEED_MARKER_LOG   JSONL file: one line per session start with what it saw
// SEED_MARKER_HANDOFF  when set, the first session writes a marker that
//                   continues from this file, so pi-session relaunches
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as fs from "node:fs";
import * as path from "node:path";

export default function (pi: ExtensionAPI) {
	pi.on("session_start", async (_event, ctx) => {
		const env = process.env;
		const marker = env.PI_RELAUNCH_MARKER ?? "";
		const wrapper = env.PI_SESSION_WRAPPER_PID ?? "";
		const own =
			env.PI_SESSION_WRAPPER === "1" &&
			path.isAbsolute(marker) &&
			path.basename(marker) === `${wrapper}-${env.PI_SESSION_LAUNCH_ID}.json` &&
			process.ppid === Number(wrapper);
		const log = env.SEED_MARKER_LOG;
		if (!log) return;
		const first = !fs.existsSync(log);
		fs.appendFileSync(log, JSON.stringify({ pid: process.pid, ppid: process.ppid, wrapper, marker, own }) + "\n");
		if (!own || !first || !env.SEED_MARKER_HANDOFF) return;
		const tmp = path.join(path.dirname(marker), `.${path.basename(marker)}.tmp-${process.pid}`);
		fs.writeFileSync(tmp, JSON.stringify({ cwd: ctx.cwd, launchPrompt: null, handoff: env.SEED_MARKER_HANDOFF, sessionFile: null }), { mode: 0o600 });
		fs.renameSync(tmp, marker);
	});
}
