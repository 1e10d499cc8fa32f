// A test extension for pi-session's relaunch path through pi's event bus:
// a "handoff" tool that writes a small note and asks pi-session's bundled
// extension (pi.events channel "pi-session:arm-relaunch") to arm the
// relaunch, then lets pi exit when the run settles. The supervisor's
// relaunch tests use it; the product's own handoff is the budget engine's
// context_handoff and /handoff.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import * as fs from "node:fs";
import * as path from "node:path";

type ArmAnswer = { ok: true; marker: string } | { ok: false; reason: string };

// armRelaunch asks pi-session's extension to arm the relaunch; without an
// answer in a few seconds (the extension is not loaded) there is none.
function armRelaunch(pi: ExtensionAPI, ctx: ExtensionContext, handoff: string): Promise<ArmAnswer> {
	return new Promise((resolve) => {
		const timer = setTimeout(() => resolve({ ok: false, reason: "pi-session's extension did not answer (is pi running under pi-session?)" }), 5000);
		pi.events.emit("pi-session:arm-relaunch", {
			handoff,
			launchPrompt: null,
			cwd: ctx.cwd,
			reply: (a: ArmAnswer) => {
				clearTimeout(timer);
				resolve(a);
			},
		});
	});
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

export default function (pi: ExtensionAPI) {
	let shutdownWhenSettled = false;

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
			const armed = await armRelaunch(pi, ctx, file);
			if (!armed.ok) return { content: [{ type: "text", text: `Handoff written to ${file}; no relaunch: ${armed.reason}` }], details: {} };
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
