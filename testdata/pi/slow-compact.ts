// A test extension that holds every compaction open for SLOW_COMPACT_MS
// after the extensions loaded before it answered session_before_compact,
// writing SLOW_COMPACT_MARK when the wait starts: a test can abort the
// compaction in exactly that window (after the relay engine wrote its
// note, before pi appends the compaction).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { writeFileSync } from "node:fs";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event) => {
		const mark = process.env.SLOW_COMPACT_MARK;
		if (mark) writeFileSync(mark, "waiting\n");
		const ms = Number(process.env.SLOW_COMPACT_MS ?? 0);
		await new Promise<void>((resolve) => {
			const t = setTimeout(resolve, ms);
			event.signal?.addEventListener("abort", () => {
				clearTimeout(t);
				resolve();
			});
		});
		return undefined;
	});
}
