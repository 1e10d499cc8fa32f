// Pins: rules the user guarantees. /pin <rule> pins a rule, /pin alone the
// user's last message, /pins lists them, /unpin <n> removes one. A pin is
// a custom entry of the session (pi-session:pin {text, from?}; /unpin
// appends pi-session:unpin {pin: <the pin's entry id>, text}), so it
// follows the branch, stays with /resume and never reaches the model as a
// message; the relay note and the handoff document read the pins from the
// session file (pins/ in Go, with the same rule: testdata/check.json).
// A pi relaunched from a handoff starts with a pi-session:continues entry
// {sessionFile, handoff} and copies the previous session's pins
// (pins.inherit on the engine host). Pins work in every session and mode,
// with the relay engine off too: handoff documents carry them.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Deadline, type Kit } from "./kit.ts";
import { echo, isControl, notify, visible, writeOut } from "./sink.ts";

export const PIN = "pi-session:pin";
export const UNPIN = "pi-session:unpin";
export const CONTINUES = "pi-session:continues";
export const MAX_CHARS = 2000;

export type Pin = { entryId: string; text: string };
export type Bad = { kind: "empty" } | { kind: "control"; at: number; char: string } | { kind: "long"; chars: number };

// checkPin is pins.Check: line ends made \n, spaces, tabs and newlines
// trimmed from both ends; refused when empty, holding a control
// character, or over MAX_CHARS characters.
export function checkPin(text: string): { text: string } | { bad: Bad } {
	const t = text.replace(/\r\n?/g, "\n").replace(/^[ \t\n]+|[ \t\n]+$/g, "");
	if (t === "") return { bad: { kind: "empty" } };
	let n = 0;
	for (const ch of t) {
		n++;
		const cp = ch.codePointAt(0)!;
		if (isControl(cp)) return { bad: { kind: "control", at: n, char: writeOut(cp) } };
	}
	if (n > MAX_CHARS) return { bad: { kind: "long", chars: n } };
	return { text: t };
}

// replay is pins.Replay over pi's branch entries: the pins in the order
// pinned, less those unpinned later on the branch and repeats; entries
// that cannot count are skipped (engine pins reports them).
export function replay(branch: any[]): Pin[] {
	const list: Pin[] = [];
	for (const e of branch) {
		if (e?.type !== "custom" || (e.customType !== PIN && e.customType !== UNPIN)) continue;
		const d = e.data;
		if (!d || typeof d !== "object" || Array.isArray(d)) continue;
		if (e.customType === UNPIN) {
			const at = typeof d.pin === "string" ? list.findIndex((p) => p.entryId === d.pin) : -1;
			if (at >= 0) list.splice(at, 1);
			continue;
		}
		if (typeof d.text !== "string") continue;
		const c = checkPin(d.text);
		if ("bad" in c || list.some((p) => p.text === c.text)) continue;
		list.push({ entryId: e.id, text: c.text });
	}
	return list;
}

// listing is what /pins shows (pins.Listing).
export function listing(texts: string[]): string {
	if (texts.length === 0) return "no pins on this branch: /pin <rule> pins a rule, /pin alone your last message\n";
	let out = `${texts.length} ${texts.length === 1 ? "pin" : "pins"} on this branch (verbatim in every relay note and handoff; /unpin <n> removes one):\n`;
	texts.forEach((t, i) => {
		const head = `  ${i + 1}. `;
		out += head + visible(t).replaceAll("\n", "\n" + " ".repeat(head.length)) + "\n";
	});
	return out;
}

// lastUserText is the text of the user's last message on the branch, for
// /pin alone; messages pi-session sent in the user's name (/handoff's
// request, a relaunch's "continue from <handoff>") are passed over.
export function lastUserText(branch: any[]): string | undefined {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e?.type !== "message" || e.message?.role !== "user") continue;
		const c = e.message.content;
		const text = typeof c === "string" ? c : Array.isArray(c) ? c.filter((b: any) => b?.type === "text" && typeof b.text === "string").map((b: any) => b.text).join("\n") : "";
		if (text.startsWith("[/handoff]") || /^continue from \/\S+\.md\s*$/.test(text)) continue;
		return text;
	}
	return undefined;
}

// badAnswer says why a text is not pinned; fromLast: it was the user's last
// message.
export function badAnswer(b: Bad, text: string, fromLast: boolean): string {
	switch (b.kind) {
		case "empty":
			return fromLast ? "/pin: your last message has no text to pin; write the rule after /pin" : "/pin: nothing to pin; write the rule after /pin, or /pin alone to pin your last message";
		case "control":
			return `/pin: ${fromLast ? "your last message" : "the pin"} holds a control character (${b.char} at character ${b.at}), which could reach the terminal: "${echo(text)}"; write the rule without it`;
		case "long":
			return fromLast
				? `/pin: your last message is ${b.chars} characters, over the limit of ${MAX_CHARS} for a pin; pin the rule itself with /pin <rule>`
				: `/pin: the pin is ${b.chars} characters, over the limit of ${MAX_CHARS}; pin the rule itself, shorter`;
	}
}

// parseUnpin reads /unpin's argument against the number of pins.
export function parseUnpin(args: string, count: number): { n: number } | { error: string } {
	const a = args.trim();
	if (count === 0) return { error: "/unpin: this branch has no pins (/pin <rule> pins one)" };
	const range = count === 1 ? "1" : `1 to ${count}`;
	if (a === "") return { error: `/unpin: which pin? /unpin <n> with n from ${range} (/pins lists them)` };
	if (!/^\d+$/.test(a)) return { error: `/unpin: "${echo(a, 40)}" is not a pin number: /unpin <n> with n from ${range} (/pins lists them)` };
	const n = Number(a);
	if (!Number.isSafeInteger(n) || n < 1 || n > count) return { error: `/unpin: there is no pin ${echo(a, 40)}: this branch has ${count === 1 ? "1 pin" : `${count} pins`} (/pins lists them)` };
	return { n };
}

type Inheritance = { sessionFile?: string; handoff?: string; pins: string[]; from?: string; warning?: string };

export function registerPins(pi: ExtensionAPI, kit: Kit) {
	const notice = (ctx: ExtensionContext, text: string, level: "info" | "warning" | "error" = "info") => notify(ctx, text, level);
	const current = (ctx: ExtensionContext) => replay(ctx.sessionManager.getBranch());

	pi.registerCommand("pin", {
		description: "Pin a rule (or, alone, your last message): kept verbatim at the top of every relay note and handoff, and by a relaunched pi",
		handler: async (args, ctx) => {
			const fromLast = args.trim() === "";
			const raw = fromLast ? lastUserText(ctx.sessionManager.getBranch()) : args;
			if (raw === undefined) {
				notice(ctx, "/pin: there is no message of yours on this branch yet; write the rule after /pin", "warning");
				return;
			}
			const c = checkPin(raw);
			if ("bad" in c) {
				notice(ctx, badAnswer(c.bad, raw, fromLast), "warning");
				return;
			}
			const list = current(ctx);
			const at = list.findIndex((p) => p.text === c.text);
			if (at >= 0) {
				notice(ctx, `/pin: already pinned as ${at + 1}: "${echo(c.text)}"`);
				return;
			}
			pi.appendEntry(PIN, { text: c.text });
			notice(ctx, `pinned as ${list.length + 1}: "${echo(c.text)}" (every relay note and handoff carries it; /pins lists the pins)`);
		},
	});

	pi.registerCommand("pins", {
		description: "List the pinned rules of this branch, numbered",
		handler: async (_args, ctx) => {
			notice(ctx, listing(current(ctx).map((p) => p.text)).trimEnd());
		},
	});

	pi.registerCommand("unpin", {
		description: "Remove a pinned rule: /unpin <n>, n from /pins",
		handler: async (args, ctx) => {
			const list = current(ctx);
			const r = parseUnpin(args, list.length);
			if ("error" in r) {
				notice(ctx, r.error, "warning");
				return;
			}
			const p = list[r.n - 1];
			pi.appendEntry(UNPIN, { pin: p.entryId, text: p.text });
			const left = list.length - 1;
			notice(ctx, `unpinned ${r.n}: "${echo(p.text)}" (${left === 0 ? "no pins left" : left === 1 ? "1 pin left" : `${left} pins left`})`);
		},
	});

	let reportCtx: ExtensionContext | undefined;
	kit.report?.(async () => {
		if (!reportCtx) return [];
		const n = current(reportCtx).length;
		return [`  pins      ${n === 0 ? "none on this branch" : `${n} on this branch`} (/pin <rule> pins one, /pins lists them)`];
	});

	// A pi relaunched from a handoff: record what it continues from, and
	// copy the previous session's pins. The engine host answers only the pi
	// it relaunched, and only for the session that pi starts with.
	pi.on("session_start", async (_event, ctx) => {
		reportCtx = ctx;
		const h = kit.hello();
		if (!h || h.role !== "main" || h.subagent || !process.env.PI_SESSION_SOCKET) return;
		if (!(await kit.ready(3000))) return;
		let a: Inheritance;
		try {
			a = (await kit.call<Inheritance>("pins.inherit", {}, { timeoutMs: Deadline.start })).result;
		} catch {
			return; // an engine host without pins, or none: nothing to inherit
		}
		if (!a?.handoff) return;
		const branch = ctx.sessionManager.getBranch();
		if (branch.some((e: any) => e?.type === "custom" && e.customType === CONTINUES)) return; // already recorded
		pi.appendEntry(CONTINUES, a.sessionFile ? { sessionFile: a.sessionFile, handoff: a.handoff } : { handoff: a.handoff });
		const have = replay(branch).map((p) => p.text);
		let copied = 0;
		for (const t of a.pins ?? []) {
			const c = checkPin(String(t));
			if ("bad" in c || have.includes(c.text)) continue;
			pi.appendEntry(PIN, { text: c.text, from: a.sessionFile || a.handoff });
			have.push(c.text);
			copied++;
		}
		if (copied > 0) notice(ctx, `pi-session: ${copied === 1 ? "1 pin" : `${copied} pins`} carried over from the previous session (/pins lists them)`);
		if (a.warning) notice(ctx, `pi-session: ${a.warning}`, "warning");
	});
}
