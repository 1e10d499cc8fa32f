// pi-session's extension: the thin side of pi-session inside pi. It
// connects to the engine host (PI_SESSION_SOCKET from the wrapper, or a
// `pi-session serve` it starts under plain pi), forwards hooks to engines,
// applies their answers and falls back to pi's own behaviour whenever the
// engine is unreachable, slow or wrong.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { VERSION as PI_VERSION } from "@earendil-works/pi-coding-agent";
import { Arbiter } from "./arbiter.ts";
import { packBlocks, unpackBlocks, type Block } from "./blocks.ts";
import { Client, Code, EngineError, human, Notices, type Hello, type State } from "./client.ts";
import { claimRole, isHeadless, isSubagentName, releaseRole } from "./role.ts";
import { Deadline, toolResultMs, type Call, type CallOptions, type Kit } from "./kit.ts";
import { registerOffload } from "./offload.ts";
import { registerPins } from "./pins.ts";
import { registerBudget } from "./budget.ts";
import { registerRecap } from "./recap.ts";
import { registerRelay } from "./relay.ts";
import { HostFinder, stopServe } from "./serve.ts";
import { log, notify, status } from "./sink.ts";
import { VERSION } from "./version.ts";

const STATUS_KEY = "pi-session";

// ARM_RELAUNCH is the pi.events channel other extensions use to ask for a
// relaunch: emit {handoff, launchPrompt?, cwd?, reply?(answer)}; reply gets
// {ok: true, marker} or {ok: false, reason}.
export const ARM_RELAUNCH = "pi-session:arm-relaunch";

export type ArmRequest = {
	handoff: string;
	launchPrompt?: string | null;
	cwd?: string;
	reply?: (answer: { ok: true; marker: string } | { ok: false; reason: string }) => void;
};

type Describe = {
	sessionFile: string;
	exists: boolean;
	entries: number;
	branch: number;
	messages: number;
	llmMessages: number;
	tokens: number;
	contextTokens: number;
	diagnostics: number;
	problems?: { text: string }[];
	rest?: string;
	leafId: string;
};

export default function (pi: ExtensionAPI) {
	const token = {};
	let client: Client | undefined;
	let ctx: ExtensionContext | undefined;
	let hello: Hello | undefined;
	const notices = new Notices(); // one notice per outage, late answers at most once in 5 minutes

	const say = (text: string, level: "info" | "warning" | "error" = "info") => notify(ctx, text, level);
	const footer = (text: string | undefined) => status(ctx, STATUS_KEY, text);

	const onState = (state: State, err?: Error) => {
		if (state === "connected") footer(client?.info?.host === "serve" ? "pi-session (serve)" : "pi-session");
		else if (state === "down") footer("pi-session: offline");
		const text = notices.state(state, err);
		if (text) say(text, "warning");
	};

	// ask calls an engine method and returns undefined on any failure: the
	// caller then keeps pi's default behaviour. A call that waited out its
	// deadline is the client's to tell (once), not every caller's.
	const ask = async <T>(method: string, params?: unknown, o?: CallOptions) => {
		if (!client) return undefined;
		try {
			return await client.call<T>(method, params, o);
		} catch (e) {
			const err = e as EngineError;
			if (err.code !== Code.Unavailable && !err.local) log(`pi-session: ${method}: ${err.message}`);
			return undefined;
		}
	};

	// call is client.call for modules that register tools and commands.
	const call: Call = (method, params, o) =>
		client ? client.call(method, params, o) : Promise.reject(new EngineError(Code.Unavailable, "no session yet"));
	let turnIndex = 0;

	// The engines share session_before_compact and input through the
	// arbiter, which holds the one written rule of who acts (arbiter.ts).
	const arbiter = new Arbiter();
	const reporters: (() => Promise<string[]>)[] = [];
	pi.on("session_before_compact", (event, c) => arbiter.compact(event, c) as any);
	pi.on("input", (event, c) => arbiter.input(event, c) as any);
	const kit: Kit = {
		call,
		ask,
		arbiter,
		hello: () => hello,
		ready: (ms) => client?.ready(ms) ?? Promise.resolve(false),
		say: (text, level) => say(text, level),
		report: (rows) => void reporters.push(rows),
	};

	pi.on("session_start", async (_event, c) => {
		ctx = c;
		const sm = c.sessionManager;
		const name = sm.getSessionName();
		hello = {
			client: "extension",
			extension: VERSION,
			pi: PI_VERSION,
			pid: process.pid,
			sessionId: sm.getSessionId() ?? "",
			sessionFile: sm.getSessionFile() ?? "",
			sessionName: name ?? "",
			cwd: c.cwd,
			role: claimRole(token),
			mode: c.mode,
			subagent: isSubagentName(name),
			headless: isHeadless(c.mode),
		};
		const finder = new HostFinder(process.env.PI_SESSION_SOCKET);
		client = new Client({
			connect: finder.find,
			hosts: finder,
			hello: () => hello!,
			onState,
			onLate: (first, count) => {
				const text = notices.late(first, count);
				if (text) say(text, "warning");
			},
		});
		client.start();
	});

	pi.on("session_shutdown", async (event) => {
		const c = client;
		client = undefined;
		footer(undefined);
		await c?.close({ timeoutMs: 1000 });
		if (hello?.role === "main" && event.reason === "quit") stopServe(); // one this process started, also as the wrapper's stand-in
		releaseRole(token);
		arbiter.reset();
	});

	// turn_start goes to the engines that asked for it (the offload engine
	// resets its per-turn budget); nothing waits for them.
	pi.on("turn_start", (event) => {
		turnIndex = event.turnIndex;
		for (const method of client?.info?.hooks?.["turn_start"] ?? []) void ask(method, { turnIndex }, { timeoutMs: Deadline.hook });
	});

	// tool_result goes to the engines that asked for it in hello; each may
	// return a patch. Any failure leaves the original result. The text
	// travels as bulk bytes; the deadline, a hook's, grows with its size.
	pi.on("tool_result", async (event, c) => {
		ctx = c;
		await client?.ready(3000); // a first result may come before hello completes (print mode)
		const methods = client?.info?.hooks?.["tool_result"];
		if (!methods || methods.length === 0) return undefined;
		let content = event.content as Block[];
		let details = event.details;
		let isError = event.isError;
		let changed = false;
		const ctxReadActive = pi.getActiveTools().includes("ctx_read");
		for (const method of methods) {
			const { blocks, bulk } = packBlocks(content);
			const params = {
				toolName: event.toolName,
				toolCallId: event.toolCallId,
				parentToolCallId: event.parentToolCallId,
				input: event.input,
				content: blocks,
				details,
				isError,
				turnIndex,
				ctxReadActive,
			};
			const timeoutMs = toolResultMs(bulk.length);
			const answer = await ask<{ content?: Block[]; details?: unknown; isError?: boolean; notice?: string }>(method, params, { bulk, signal: c.signal, timeoutMs });
			const patch = answer?.result;
			if (!patch) continue;
			if (patch.notice) say(patch.notice, "warning"); // for the user: the engine says it once per outage
			if (patch.content === undefined && patch.details === undefined && patch.isError === undefined) continue;
			try {
				if (patch.content) content = unpackBlocks(patch.content, answer.bulk);
			} catch (e) {
				log(`pi-session: ${method}: ${(e as Error).message}`);
				continue;
			}
			if (patch.details !== undefined) details = patch.details;
			if (patch.isError !== undefined) isError = patch.isError;
			changed = true;
		}
		return changed ? { content: content as any, details, isError } : undefined;
	});

	registerOffload(pi, kit);
	registerBudget(pi, kit);
	registerRecap(pi, kit);
	registerRelay(pi, kit);
	registerPins(pi, kit);

	pi.events.on(ARM_RELAUNCH, async (data) => {
		const req = data as ArmRequest;
		const answer = await armRelaunch(req);
		req.reply?.(answer);
	});

	const armRelaunch = async (req: ArmRequest): Promise<{ ok: true; marker: string } | { ok: false; reason: string }> => {
		if (!client || !hello) return { ok: false, reason: "pi-session's extension has no session yet" };
		if (hello.role !== "main") return { ok: false, reason: "only the main session can relaunch pi" };
		try {
			const a = await client.call<{ marker: string }>(
				"supervisor.armRelaunch",
				{
					handoff: req.handoff,
					launchPrompt: req.launchPrompt ?? null,
					cwd: req.cwd ?? ctx?.cwd,
					sessionFile: ctx?.sessionManager.getSessionFile() ?? null,
				},
				{ timeoutMs: Deadline.command },
			);
			return { ok: true, marker: a.result.marker };
		} catch (e) {
			const err = e as EngineError;
			if (err.code === Code.MethodNotFound) return { ok: false, reason: "pi is not running under pi-session (alias pi=pi-session), so nothing can relaunch it" };
			return { ok: false, reason: err.message };
		}
	};

	pi.registerCommand("pi-session", {
		description: "Show pi-session's engine: connection, versions, socket, latency, and this session as the engine reads it",
		handler: async (_args, c) => {
			ctx = c;
			say(await report(c));
		},
	});

	const report = async (c: ExtensionContext): Promise<string> => {
		const lines: string[] = [];
		const row = (k: string, v: string) => lines.push(`  ${k.padEnd(9)} ${v}`);
		const cl = client;
		const connected = (await cl?.ready()) ?? false;
		const info = cl?.info;
		const socket = process.env.PI_SESSION_SOCKET ?? info?.socket ?? "(none: pi-session serve did not start)";
		if (!cl || !connected || !info) {
			lines.push(`pi-session: engine unreachable${cl?.lastError ? ` (${cl.lastError.message})` : ""}; pi runs without it and reconnects by itself`);
			row("socket", socket);
			row("versions", `extension ${VERSION} · pi ${PI_VERSION}`);
			if (cl) lateRow(cl, row);
			return lines.join("\n");
		}
		const t0 = performance.now();
		const ping = await ask("ping", undefined, { timeoutMs: Deadline.command });
		const rtt = performance.now() - t0;
		const up = Math.round((Date.now() - Date.parse(info.startedAt)) / 1000);
		lines.push(`pi-session: connected to the engine host (${info.host}, pid ${info.pid}), up ${duration(up)}`);
		row("versions", `pi-session ${info.version} · extension ${VERSION} · pi ${PI_VERSION} · protocol ${info.protocol}`);
		row("socket", info.socket);
		row("latency", ping ? `${rtt.toFixed(2)} ms round trip` : "ping failed");
		const h = hello!;
		const flags = [h.role, h.mode, h.subagent ? "subagent" : "", h.headless ? "headless" : "", info.owned ? "relaunch available" : ""].filter(Boolean);
		row("session", `${h.sessionId} (${flags.join(", ")})`);
		lateRow(cl, row);
		let r: Describe;
		try {
			r = (await call<Describe>("session.describe", { leafId: c.sessionManager.getLeafId() ?? "" }, { timeoutMs: Deadline.command })).result;
		} catch (e) {
			row("file", `${c.sessionManager.getSessionFile() ?? "(in memory)"}`);
			row("read", `session.describe failed: ${(e as EngineError).message}`);
			return lines.join("\n");
		}
		row("file", r.exists ? r.sessionFile : `${r.sessionFile || "(in memory)"} (not written yet)`);
		const usage = c.getContextUsage();
		const piTokens = usage?.tokens == null ? "unknown" : String(usage.tokens);
		row("read", `${r.entries} entries, branch ${r.branch}, ${r.messages} messages (${r.llmMessages} sent to the model)`);
		row("tokens", `${r.contextTokens} in context (pi says ${piTokens}); ${r.tokens} estimated over the messages`);
		if (r.diagnostics > 0) {
			row("problems", `${r.diagnostics} in the file: lines pi skips, tree defects, fields it cannot use as meant`);
			for (const p of r.problems ?? []) lines.push(`            ${p.text}`);
			const more = r.diagnostics - (r.problems?.length ?? 0);
			if (more > 0 && r.rest) lines.push(`            ${more} more: ${r.rest}`);
		}
		for (const rows of reporters) lines.push(...(await rows().catch(() => [])));
		return lines.join("\n");
	};
}

// lateRow says how often pi went on without the engine: calls that waited
// out their deadline, calls that failed at once, hosts left.
function lateRow(cl: Client, row: (k: string, v: string) => void) {
	const st = cl.stats;
	if (st.waited + st.skipped + st.stuck === 0) return;
	const last = st.last ? ` (last: ${st.last.method}, ${human(st.last.timeoutMs)})` : "";
	const n = (k: number, one: string, many: string) => `${k} ${k === 1 ? one : many}`;
	row("late", `${n(st.waited, "call waited out its", "calls waited out their")} deadline${last}, ${st.skipped} went on at once; ${n(st.stuck, "host", "hosts")} left for not answering`);
}

function duration(s: number): string {
	if (s < 60) return `${s}s`;
	if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ""}`;
	return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}
