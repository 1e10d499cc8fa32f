// The budget engine's side in pi: the context_handoff tool, /handoff, and
// the hooks that feed the policy (budget.* on the engine host) and carry
// out its answers: tool_call blocks, turn_end notices and the retain-none
// compaction draft with its continuation, agent_before_settle's one
// continuation, agent_settled's shutdown for a relaunch, the idle-input
// compaction and the overflow recovery. Decisions and text live in Go.
// With the engine unreachable nothing is blocked and pi runs as without
// the extension; a handoff the engine cannot write is a tool error.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { calculateContextTokens, estimateTokens, getAgentDir } from "@earendil-works/pi-coding-agent";
import { isContextOverflow } from "@earendil-works/pi-ai";
import { Type } from "typebox";
import * as fs from "node:fs";
import * as path from "node:path";
import { Deadline, type Kit } from "./kit.ts";
import { guardIntegration } from "./guards.ts";
import { Code, type EngineError } from "./client.ts";
import { status, tool } from "./sink.ts";

type View = {
	mode: string;
	configuredMode: string;
	footer: string;
	phase: string;
	action: string;
	projected: boolean;
	tokens: number | null;
	gate: boolean;
	live: boolean;
	pending: string;
	wrapper: boolean;
	model: string;
	quietBelow: number | null;
};
type Draft = Record<string, unknown> & { type: string };
type Answer = {
	view: View;
	entries?: Draft[];
	continue?: boolean;
	notify?: { level: "info" | "warning" | "error"; text: string }[];
	block?: boolean;
	grace?: boolean;
	reason?: string;
	shutdown?: boolean;
	marker?: string;
	committed?: string;
};

type HandoffAnswer = { text: string; isError?: boolean; details?: unknown; view: View };

// HOST_WAIT_MS bounds the wait for a host to answer after the one that ran
// a handoff died (under plain pi the extension starts a new one).
const HOST_WAIT_MS = 15_000;

// untilAnswered calls fn until it answers (not undefined), at most ms.
async function untilAnswered<T>(fn: () => Promise<T | undefined>, ms: number, signal?: AbortSignal): Promise<T | undefined> {
	const until = Date.now() + ms;
	for (;;) {
		const r = await fn();
		if (r !== undefined || Date.now() >= until || signal?.aborted) return r;
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
}

// MANUAL_PREFIX starts the request /handoff sends (budget.ManualPrefix).
export const MANUAL_PREFIX = "[/handoff]";
const STATUS_KEY = "pi-session-budget";
const OWNED = "pi-session budget compaction";

export function registerBudget(pi: ExtensionAPI, kit: Kit) {
	const guards = guardIntegration(path.join(getAgentDir(), "lib", "guards.ts"), kit.say);
	let view: View | undefined;
	let ctx: ExtensionContext | undefined;
	const blocked = new Set<string>();
	const grace = new Set<string>();
	let handoffDone = false; // context_handoff succeeded in this turn
	let pendingRef: { toolCallId: string; path: string } | undefined; // ... and the handoff it wrote
	let owned = false; // the next session_before_compact is the budget's
	let mechanical = false; // ... and the native summarizer already failed
	let overflowTried = false;
	const settleWaiters: (() => void)[] = [];
	// PI_SESSION_BUDGET_TIMING=<file>: the benchmark's measure of the time
	// spent in the per-turn hooks, appended as one JSON line at shutdown.
	const timingFile = process.env.PI_SESSION_BUDGET_TIMING;
	const timing = { turns: 0, toolCalls: 0, turnEndMs: 0, toolCallMs: 0, usageMs: 0 };

	// Every budget call goes through one queue, so the engine sees the
	// session's events in pi's order (the host answers calls
	// concurrently); background calls are sent in turn without pi waiting.
	// A call's deadline (a hook's unless it names one) runs from when it
	// joins the queue: pi never waits longer, and a call still queued at
	// its deadline is never sent.
	let queue: Promise<unknown> = Promise.resolve();
	const inOrder = <T>(fn: () => Promise<T>): Promise<T> => {
		const p = queue.then(fn, fn);
		queue = p.catch(() => undefined);
		return p;
	};
	const ask = <T>(method: string, params: unknown, o?: { timeoutMs?: number; signal?: AbortSignal }) => {
		const ms = o?.timeoutMs ?? Deadline.hook;
		const deadline = Date.now() + ms;
		const queued = inOrder(() => kit.ask<T>(method, params, { ...o, deadline }));
		return Promise.race([queued, new Promise<undefined>((r) => setTimeout(r, ms + 1).unref?.())]);
	};
	const background = (method: string, params: unknown) => {
		void ask<Answer>(method, params).then((r) => show(r?.result.view));
	};

	let syncSettle = () => {};
	const show = (v: View | undefined) => {
		if (!v) return;
		view = v;
		syncSettle();
		if (!ctx?.hasUI) return;
		const parts = [v.footer];
		if (v.phase !== "idle") parts.push(v.projected ? `would be ${v.phase}` : v.phase);
		status(ctx, STATUS_KEY, parts.join(" · "));
	};
	const notify = (a: Answer | undefined) => {
		for (const n of a?.notify ?? []) kit.say(n.text, n.level);
	};
	const model = (c: ExtensionContext) => (c.model ? `${c.model.provider}/${c.model.id}` : "");
	// committing: a handoff waits for this turn's end or settle, which
	// commits it (reading it, running git) or arms the relaunch.
	const committing = () => handoffDone || !!view?.pending;

	pi.on("session_start", async (_event, c) => {
		ctx = c;
		view = undefined;
		overflowTried = false;
		if (!(await kit.ready(3000))) return;
		show((await ask<View>("budget.start", { model: model(c), guardOff: await guards.off() }, { timeoutMs: Deadline.start }))?.result);
	});

	// Every input reloads the configuration; a user's input after
	// idleMinutes with a valid stored handoff compacts to it first.
	kit.arbiter.onInput("budget", async (event, c) => {
		ctx = c;
		if (event.source !== "extension") overflowTried = false;
		const a = (await ask<{ compact: boolean; view: View }>("budget.input", { source: event.source, guardOff: await guards.off() }))?.result;
		show(a?.view);
		if (a?.compact) await compactNow(c, false);
		return { action: "continue" };
	});

	pi.on("before_agent_start", async (event) => {
		if (event.messageType !== "user") return undefined; // internal continuations keep the run's bounds
		const prompt: string = event.prompt ?? "";
		show((await ask<View>("budget.agentStart", { manual: prompt.startsWith(MANUAL_PREFIX), prompt: prompt.slice(-4096) }))?.result);
		return undefined;
	});

	pi.on("tool_call", async (event) => {
		const t0 = timingFile ? performance.now() : 0;
		try {
			return await toolCall(event);
		} finally {
			if (timingFile) {
				timing.toolCalls++;
				timing.toolCallMs += performance.now() - t0;
			}
		}
	});
	pi.on("session_shutdown", () => {
		if (timingFile) fs.appendFileSync(timingFile, JSON.stringify(timing) + "\n");
	});
	const toolCall = async (event: any) => {
		const params = { toolName: event.toolName, toolCallId: event.toolCallId, input: event.input };
		if (view && !view.live) {
			// Observe mode: the preview may say would_tool_blocked; nothing is blocked.
			if (view.mode !== "off") background("budget.toolCall", params);
			return undefined;
		}
		if (!view?.gate) return undefined;
		const a = (await ask<Answer>("budget.toolCall", params))?.result;
		if (!a) return undefined; // fail open
		show(a.view);
		if (a.grace) grace.add(event.toolCallId);
		if (!a.block) return undefined;
		blocked.add(event.toolCallId);
		return { block: true as const, reason: a.reason };
	};

	// A tool that ran and finished after the handoff was written
	// invalidates it; a blocked one does not.
	pi.on("tool_execution_end", async (event) => {
		if (blocked.has(event.toolCallId) || event.toolName === "context_handoff" || !handoffDone || !view?.pending) return;
		show((await ask<View>("budget.toolDone", { toolName: event.toolName }))?.result);
	});

	// Each turn is observed from its messages: the assistant message (its
	// usage, its tool calls) and one toolResult message per call, all of
	// which pi delivers before the turn's turn_end. A turn_end handler is
	// registered only for a turn whose answer may change what pi does (an
	// enforce-mode or /handoff turn that is not quiet): with any turn_end
	// handler pi builds the session's whole boundary context twice per turn,
	// a cost that grows with the session. Every other turn is recorded
	// without making pi wait.
	type Turn = { msg: any; calls: number; results: any[]; extra: number; sent: boolean; params?: any };
	let turn: Turn | undefined;
	let turnIndex = 0;
	let offTurnEnd: (() => void) | undefined;
	pi.on("turn_start", (event) => {
		turnIndex = event.turnIndex;
	});
	pi.on("message_end", async (event, c) => {
		ctx = c;
		const m = event.message as any;
		if (m.role === "assistant") {
			await flush(); // a turn whose results never came (a path pi did not take before)
			const failed = m.stopReason === "error" || m.stopReason === "aborted";
			const calls = failed ? 0 : (m.content ?? []).filter((b: any) => b.type === "toolCall").length;
			turn = { msg: m, calls, results: [], extra: 0, sent: false };
		} else if (m.role === "toolResult" && turn && !turn.sent) {
			turn.results.push(m);
			turn.extra += estimateTokens(m);
		} else return undefined;
		if (turn.results.length >= turn.calls) await ready(c);
		return undefined;
	});

	// turnParams is what budget.turnEnd gets for a turn.
	const turnParams = async (t: Turn, c: ExtensionContext) => {
		const msg = t.msg;
		const okAssistant = msg.stopReason !== "error" && msg.stopReason !== "aborted";
		if (okAssistant) overflowTried = false;
		const usage = okAssistant && msg.usage ? calculateContextTokens(msg.usage) : 0;
		const u0 = timingFile ? performance.now() : 0;
		// pi's own context estimate (getContextUsage) is this turn's usage
		// plus its tool results; ask pi (which walks the whole session)
		// only when the turn has no usable usage.
		const tokens = usage ? usage + t.extra : (c.getContextUsage()?.tokens ?? null);
		if (timingFile) timing.usageMs += performance.now() - u0;
		return {
			turnIndex,
			tokens,
			usage: usage || null,
			model: model(c),
			toolResults: t.results.map((r: any) => ({
				toolName: r.toolName,
				toolCallId: r.toolCallId,
				isError: !!r.isError,
				grace: grace.has(r.toolCallId),
				blocked: blocked.has(r.toolCallId),
			})),
			continues: t.calls > 0,
			outcome: msg.stopReason === "aborted" ? "aborted" : msg.stopReason === "error" ? "error" : "completed",
			guardOff: await guards.off(),
			// A host that did not write the handoff (the one that did died)
			// takes it over from its files.
			pending: handoffDone && pendingRef && view?.pending === pendingRef.path ? pendingRef : undefined,
		};
	};

	// ready: every message of the turn is in. A turn that cannot change
	// anything (observe and off mode, or enforce mode below quietBelow) is
	// sent now without waiting; any other gets the turn_end handler.
	const ready = async (c: ExtensionContext) => {
		const t = turn;
		if (!t || t.sent) return;
		const t0 = timingFile ? performance.now() : 0;
		const params = await turnParams(t, c);
		const quiet = !view?.live || (view.quietBelow != null && (params.tokens === null || params.tokens < view.quietBelow) && params.model === view.model);
		if (quiet && view) {
			t.sent = true;
			offTurnEnd?.();
			offTurnEnd = undefined;
			blocked.clear();
			grace.clear();
			handoffDone = false;
			background("budget.turnEnd", params);
		} else {
			t.params = params;
			offTurnEnd ??= pi.on("turn_end", turnEnd);
		}
		if (timingFile) {
			timing.turns++;
			timing.turnEndMs += performance.now() - t0;
		}
	};

	// flush sends a turn that was never sent (no turn_end came for it).
	const flush = async () => {
		const t = turn;
		if (!t || t.sent || !ctx) return;
		t.sent = true;
		background("budget.turnEnd", t.params ?? (await turnParams(t, ctx)));
	};

	const turnEnd = async (event: any, c: ExtensionContext) => {
		ctx = c;
		const t = turn;
		const t0 = timingFile ? performance.now() : 0;
		if (!t || t.sent) return undefined;
		t.sent = true;
		const params = t.params ?? (await turnParams(t, c));
		let a = (await ask<Answer>("budget.turnEnd", params, { timeoutMs: committing() ? Deadline.commit : Deadline.hook }))?.result;
		const ref = params.pending;
		if (!a && ref) {
			// The host died (or stopped answering) with a handoff waiting
			// for this commit: a new host takes it over from its files.
			a = (await untilAnswered(() => ask<Answer>("budget.turnEnd", params, { timeoutMs: Deadline.commit }), HOST_WAIT_MS))?.result;
			if (a?.committed) kit.say(`pi-session: the engine host stopped before the context reset; the host that took over resets it to the handoff ${ref.path}`, "warning");
		}
		if (timingFile) timing.turnEndMs += performance.now() - t0;
		blocked.clear();
		grace.clear();
		handoffDone = false;
		pendingRef = undefined;
		if (!a && ref) {
			kit.say(`pi-session: the engine host stopped before the context reset to the handoff ${ref.path} and no host answered within ${HOST_WAIT_MS / 1000} s: the context was not reset (the handoff is on disk)`, "error");
			const note = `[pi-session budget] The context was NOT reset to the handoff ${ref.path}: pi-session's engine stopped before the reset. The conversation continues as it was; when the budget asks for a handoff again, call context_handoff again.`;
			return { entries: [...event.entries, { type: "custom_message", customType: "pi-session-budget", content: note, display: true }] as any[] };
		}
		if (!a) return undefined;
		show(a.view);
		notify(a);
		if (!a.view.pending) kit.arbiter.end("handoff");
		if (!a.entries?.length && !a.continue) return undefined;
		return { entries: [...event.entries, ...((a.entries ?? []) as any[])], continue: a.continue || undefined };
	};

	// agent_before_settle, like turn_end, makes pi build the whole boundary
	// context, so its handler is registered only while a settle could ask
	// for a continuation (a handoff required, a fallback, a /handoff, in a
	// mode that carries it out); otherwise the settle is reported at
	// agent_settled, for the record and observe mode's preview.
	// No job, watch or subagent registry is available to pi-session
	// (pendingWork is what they would count), so the settle-time idle
	// handoff never starts here; see README, Idle reset.
	let settleSeen = false;
	const beforeSettle = async (event: any) => {
		settleSeen = true;
		const a = (await ask<Answer>("budget.settle", { pendingWork: 0 }))?.result;
		if (!a) return undefined;
		show(a.view);
		if (!a.entries?.length) return undefined;
		return { entries: [...event.entries, ...(a.entries as any[])], continue: a.continue || undefined };
	};
	let offSettle: (() => void) | undefined = pi.on("agent_before_settle", beforeSettle);
	syncSettle = () => {
		const want = !view || (view.live && view.quietBelow == null);
		if (want && !offSettle) offSettle = pi.on("agent_before_settle", beforeSettle);
		if (!want && offSettle) {
			offSettle();
			offSettle = undefined;
		}
	};

	pi.on("agent_settled", async (event, c) => {
		ctx = c;
		for (const w of settleWaiters.splice(0)) w();
		await flush();
		if (!settleSeen) background("budget.settle", { pendingWork: 0 });
		settleSeen = false;
		const a = (await ask<Answer>("budget.settled", {}, { timeoutMs: committing() || view?.phase === "fallback-armed" ? Deadline.commit : Deadline.hook }))?.result;
		if (a) {
			show(a.view);
			notify(a);
			if (a.shutdown) {
				kit.say(`pi-session: pi exits and restarts in a fresh process from the handoff ${a.view.pending || ""}`.trim());
				c.shutdown(); // a no-op in print mode, which exits by itself
				return;
			}
		}
		if (event.aborted) return;
		await overflowRecovery(c);
	});

	// overflowRecovery: the run ended on a provider context overflow that
	// pi did not recover (its own compaction is off); compact once and retry.
	const overflowRecovery = async (c: ExtensionContext) => {
		const branch = c.sessionManager.getBranch() as any[];
		const leaf = branch[branch.length - 1];
		const m = leaf?.type === "message" ? leaf.message : undefined;
		if (!m || m.role !== "assistant" || m.stopReason !== "error" || !isContextOverflow(m, c.model?.contextWindow ?? 0)) return;
		const a = (await ask<{ recover: boolean; text: string; view: View }>("budget.overflow", { attempted: overflowTried }))?.result;
		if (!a) return;
		show(a.view);
		if (a.text) kit.say(a.text, a.recover ? "warning" : "error");
		if (!a.recover) return;
		overflowTried = true;
		if (await compactNow(c, true)) {
			pi.sendMessage(
				{ customType: "pi-session-budget", content: "[pi-session budget] The last request exceeded the model's context window, so the context was compacted. Continue the task from where it stopped.", display: true },
				{ triggerTurn: true },
			);
		}
	};

	// compactNow runs one budget-owned compaction and waits for it; a
	// failed native summarizer gets one bounded mechanical fallback.
	const compactNow = async (c: ExtensionContext, allowMechanical: boolean): Promise<boolean> => {
		const once = (mech: boolean) =>
			new Promise<{ ok: boolean; error?: string }>((resolve) => {
				owned = true;
				mechanical = mech;
				c.compact({
					customInstructions: OWNED,
					onComplete: () => resolve({ ok: true }),
					onError: (e: Error) => resolve({ ok: false, error: e.message }),
				});
			});
		let r = await once(false);
		if (!r.ok && allowMechanical && !/nothing to compact|already compacted|cancel/i.test(r.error ?? "")) r = await once(true);
		owned = mechanical = false;
		show((await ask<View>("budget.compactResult", { ok: r.ok, error: r.error ?? "", owned: true, reason: "manual" }))?.result);
		return r.ok;
	};

	kit.arbiter.onCompaction("budget", async (event) => {
		const mine = owned && event.customInstructions === OWNED;
		const a = (
			await ask<{ cancel?: boolean; summary?: string; details?: unknown } | null>(
				"budget.compaction",
				{
					reason: event.reason,
					owned: mine,
					tokensBefore: event.preparation?.tokensBefore ?? 0,
					mechanical: mine && mechanical,
				},
				{ timeoutMs: mine ? Deadline.commit : Deadline.hook },
			)
		)?.result;
		if (!a) return undefined;
		if (a.cancel) return { cancel: true };
		if (!a.summary) return undefined;
		return { compaction: { summary: a.summary, firstKeptEntryId: null, tokensBefore: event.preparation?.tokensBefore ?? 0, details: a.details } };
	});

	pi.on("session_compact_failed", async (event) => {
		if (event.fromExtension && owned) return; // compactNow reports its own
		show((await ask<View>("budget.compactResult", { ok: false, error: event.errorMessage ?? "", owned: false, reason: event.reason }))?.result);
	});

	// lostCall settles a context_handoff call the host never answered
	// (it died, or the connection broke, in the middle): the host that
	// answers next says whether the handoff was written, and takes it over
	// when it was. It returns undefined when nothing was sent (the engine
	// was down before the call) or the user cancelled; else an answer, an
	// error one when no host can say.
	const lostCall = async (err: EngineError, connected: boolean, toolCallId: string, signal?: AbortSignal): Promise<HandoffAnswer | undefined> => {
		if (err.code === Code.Cancelled || (err.code === Code.Unavailable && !connected)) return undefined;
		const r = await untilAnswered(() => inOrder(() => kit.ask<HandoffAnswer>("budget.handoffOutcome", { toolCallId }, { timeoutMs: Deadline.command, signal })), HOST_WAIT_MS, signal);
		const o = r?.result;
		if (!o) {
			const text = `context_handoff: pi-session's engine host stopped during this call (${err.message}) and no host answered within ${HOST_WAIT_MS / 1000} s, so whether the handoff was written is unknown; nothing was reset. Call context_handoff again.`;
			kit.say(`pi-session: ${text.slice("context_handoff: ".length)}`, "warning");
			return { text, isError: true, view: view as View }; // the last view: no host says otherwise
		}
		if (o.isError) kit.say("pi-session: the engine host stopped during context_handoff before the handoff was written; nothing was reset, and the model is asked to call it again", "warning");
		else if (o.view.pending) kit.say(`pi-session: the engine host stopped during context_handoff; the handoff ${o.view.pending} was complete, and the context resets to it at the end of this turn`, "warning");
		return o;
	};

	pi.registerTool(tool({
		name: "context_handoff",
		label: "Context handoff",
		description:
			"Write a structured handoff so the session continues from it with a fresh context: verified facts, unverified hypotheses and the user's constraints verbatim are kept apart; git state is collected automatically. Required: goal, next_step, facts. After it succeeds, end your turn without further tools.",
		promptSnippet: "context_handoff: record goal, next step, verified facts and the user's constraints when the context budget asks (or the user does); then end the turn",
		parameters: Type.Object({
			goal: Type.String({ description: "The task and the original request, verbatim where it matters" }),
			next_step: Type.String({ description: "The exact next action" }),
			facts: Type.String({ description: "Verified facts: HEAD/review SHAs, CI run ids, issue/PR states, completed work" }),
			user_constraints: Type.Optional(Type.String({ description: "The user's constraints, verbatim" })),
			decisions: Type.Optional(Type.String({ description: "Decisions taken, and why" })),
			hypotheses: Type.Optional(Type.String({ description: "Unverified explanations, explicitly not facts" })),
			open_items: Type.Optional(Type.String({ description: "Open questions and unfinished items" })),
			files_to_read: Type.Optional(Type.Array(Type.String(), { description: "Files to read first (absolute, or relative to the cwd)" })),
			watch_actions: Type.Optional(
				Type.Array(
					Type.Object({
						id: Type.String(),
						target: Type.String(),
						on_complete: Type.String(),
						cancel: Type.Optional(Type.String()),
					}),
					{ description: "One entry per running job, watch or subagent: what to do when it completes" },
				),
			),
			launch_prompt: Type.Optional(Type.String({ description: "Prompt text for a relaunched pi, or an absolute path to an existing prompt file" })),
		}),
		async execute(toolCallId, params, signal) {
			const slot = kit.arbiter.begin("handoff") || kit.arbiter.busy() === "handoff";
			if (!slot) throw new Error(`context_handoff: pi-session's ${kit.arbiter.busy()} is running on this session; try again when it has finished`);
			let a: HandoffAnswer;
			const connected = await kit.ready(3000);
			try {
				a = (await inOrder(() => kit.call<HandoffAnswer>("budget.handoff", { args: params, toolCallId, integrations: integrations() }, { timeoutMs: Deadline.handoff, signal }))).result;
			} catch (e) {
				const err = e as EngineError;
				const lost = await lostCall(err, connected, toolCallId, signal);
				if (!lost) {
					kit.arbiter.end("handoff");
					throw new Error(`context_handoff: pi-session's engine is unreachable (${err.message}); no handoff was written. Call context_handoff again.`);
				}
				a = lost;
			}
			show(a.view);
			if (a.isError) {
				if (!a.view?.pending) kit.arbiter.end("handoff");
				throw new Error(a.text);
			}
			if (a.view?.pending) {
				handoffDone = true;
				pendingRef = { toolCallId, path: a.view.pending };
			} else kit.arbiter.end("handoff");
			return { content: [{ type: "text" as const, text: a.text }], details: a.details ?? {} };
		},
	}));

	pi.registerCommand("handoff", {
		description: "Start over from a handoff: the agent writes context_handoff now (optional instructions), then pi continues from it in a fresh process (under pi-session) or in place",
		handler: async (args, c) => {
			ctx = c;
			const a = (await ask<{ request: string; view: View }>("budget.manual", { instructions: args.trim() }, { timeoutMs: Deadline.command }))?.result;
			if (!a) {
				kit.say("pi-session: cannot make a handoff: the engine is unreachable", "error");
				return;
			}
			show(a.view);
			if (!c.isIdle()) {
				pi.sendUserMessage(a.request, { deliverAs: "followUp" });
				return;
			}
			// Wait for the run the request starts to settle: print mode goes
			// on to its next message (or exits) when the command returns.
			const settled = new Promise<void>((resolve) => settleWaiters.push(resolve));
			pi.sendUserMessage(a.request);
			await settled;
		},
	});
}

// integrations says which optional registries this process exposes.
function integrations(): string[] {
	const g = globalThis as any;
	const has = (name: string) => g[Symbol.for(name)] !== undefined;
	return [
		`pending jobs/watches: ${has("pi-jobs.liveManagers") ? "registry present, not inventoried by this version" : "unavailable (no pi-jobs registry in this process)"}`,
		`running subagents: ${has("pi-subagents:manager") ? "registry present, not inventoried by this version" : "unavailable (no pi-subagents registry in this process)"}`,
		"scheduled agents: not exposed by registry",
	];
}

