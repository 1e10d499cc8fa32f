// The demo's handoff: a /handoff command and a handoff tool that write a
// handoff note and, when pi runs under pi-session, the relaunch marker
// pi-session assigned to this launch, then let pi exit so pi-session starts
// a fresh pi that continues from the note.
//
// The marker is written only by pi-session's own child: PI_SESSION_WRAPPER=1,
// PI_SESSION_WRAPPER_PID equal to this process's parent, and a marker path
// whose name carries PI_SESSION_LAUNCH_ID. A pi started from pi's bash tool
// inherits the variables but has another parent, so it cannot arm its
// ancestor's relaunch. Format: {"cwd","launchPrompt","handoff","sessionFile","launchId"}.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import * as fs from "node:fs";
import * as path from "node:path";

type Owner = { marker: string; launchId: string } | { refused: string };

function markerOwner(): Owner {
	const env = process.env;
	if (env.PI_SESSION_WRAPPER !== "1") return { refused: "not running under pi-session" };
	if (Number(env.PI_SESSION_WRAPPER_PID) !== process.ppid)
		return { refused: `parent ${process.ppid} is not PI_SESSION_WRAPPER_PID=${env.PI_SESSION_WRAPPER_PID}` };
	const marker = env.PI_RELAUNCH_MARKER ?? "";
	const launchId = env.PI_SESSION_LAUNCH_ID ?? "";
	if (!path.isAbsolute(marker) || !launchId || !path.basename(marker).endsWith(`-${launchId}.json`))
		return { refused: "PI_RELAUNCH_MARKER does not name this launch" };
	return { marker, launchId };
}

function writeAtomic(file: string, data: string) {
	const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}`);
	const fd = fs.openSync(tmp, "w", 0o600);
	try {
		fs.writeSync(fd, data);
		fs.fsyncSync(fd);
	} finally {
		fs.closeSync(fd);
	}
	fs.renameSync(tmp, file);
	const dir = fs.openSync(path.dirname(file), "r");
	try {
		fs.fsyncSync(dir);
	} finally {
		fs.closeSync(dir);
	}
}

function userMessages(ctx: ExtensionContext): string[] {
	const out: string[] = [];
	for (const e of ctx.sessionManager.getBranch() as any[]) {
		if (e.type !== "message" || e.message?.role !== "user") continue;
		const c = e.message.content;
		const text = typeof c === "string" ? c : (c ?? []).filter((b: any) => b.type === "text").map((b: any) => b.text).join("\n");
		if (text.trim()) out.push(text.trim());
	}
	return out;
}

// writeHandoff writes <cwd>/.ai-work/handoffs/<sessionId>-<n>.md and returns its path.
function writeHandoff(ctx: ExtensionContext, goal: string, nextStep: string): string {
	const dir = path.join(ctx.cwd, ".ai-work", "handoffs");
	fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
	const id = ctx.sessionManager.getSessionId();
	let n = 1;
	while (fs.existsSync(path.join(dir, `${id}-${n}.md`))) n++;
	const file = path.join(dir, `${id}-${n}.md`);
	const requests = userMessages(ctx).filter((m) => !m.startsWith("/handoff"));
	const body = [
		`# Handoff ${id}-${n}`,
		"",
		"## Goal",
		goal || requests[requests.length - 1] || "Continue the demo",
		"",
		"## User messages since the session started",
		...(requests.length ? requests.map((r) => `- ${r.split("\n")[0]}`) : ["- (none)"]),
		"",
		"## Next step",
		nextStep || "Tell the user the session continued in a fresh process.",
		"",
	].join("\n");
	writeAtomic(file, body);
	return file;
}

// arm writes the relaunch marker for this launch; it returns why not when pi
// is not pi-session's own child.
function arm(ctx: ExtensionContext, handoff: string): string | undefined {
	const owner = markerOwner();
	if ("refused" in owner) return owner.refused;
	const marker = {
		cwd: ctx.cwd,
		launchPrompt: null,
		handoff,
		sessionFile: ctx.sessionManager.getSessionFile() ?? null,
		launchId: owner.launchId,
	};
	writeAtomic(owner.marker, JSON.stringify(marker, null, 2) + "\n");
	return undefined;
}

export default function (pi: ExtensionAPI) {
	let shutdownWhenSettled = false;

	pi.registerCommand("handoff", {
		description: "Write a handoff note and let pi-session relaunch pi from it",
		handler: async (args, ctx) => {
			const file = writeHandoff(ctx, args.trim(), "");
			const refused = arm(ctx, file);
			if (refused) {
				ctx.ui.notify(`Handoff written to ${file}; no relaunch: ${refused}`, "warning");
				return;
			}
			ctx.ui.notify(`Handoff written to ${file}; pi exits and pi-session relaunches it`, "info");
			ctx.shutdown();
		},
	});

	pi.registerTool({
		name: "handoff",
		label: "Handoff",
		description: "Write a handoff note so the session continues in a fresh pi process.",
		parameters: Type.Object({
			goal: Type.String({ description: "The task, verbatim where it matters" }),
			next_step: Type.Optional(Type.String({ description: "The exact next action" })),
		}),
		async execute(_id, params, _signal, _onUpdate, ctx) {
			const file = writeHandoff(ctx, params.goal, params.next_step ?? "");
			const refused = arm(ctx, file);
			if (refused) return { content: [{ type: "text", text: `Handoff written to ${file}; no relaunch: ${refused}` }], details: {} };
			shutdownWhenSettled = true;
			return { content: [{ type: "text", text: `Handoff written to ${file}; pi exits when this run settles.` }], details: {} };
		},
	});

	pi.on("agent_settled", (_event, ctx) => {
		if (!shutdownWhenSettled) return;
		shutdownWhenSettled = false;
		ctx.shutdown(); // a no-op in print mode, which exits by itself
	});
}
