// The relay engine's side in pi: /relay, the recall tool, the automatic
// triggers (A: on input past inputMinTokens; B: before the prompt cache
// expires) and their notices. The note itself, where it is stored and what
// recall answers are decided in Go (relay.* on the engine host); this
// module only talks to pi. It registers nothing in subagent sessions and in
// print/json mode, nor when context-relay.json says "enabled": false (read
// at session start, before anything is registered; with the engine
// unreachable then, the defaults apply: the relay is on).
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { createHash, randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { Code, EngineError } from "./client.ts";
import { Deadline, type Kit } from "./kit.ts";
import { notify, tool } from "./sink.ts";

// MARKER starts the customInstructions of a relay's compaction: the engine
// answers only compactions that carry it (with this relay's token).
export const MARKER = "pi-session:context-relay:v1:";
export const RESEND_ENTRY = "context-relay:resend";

export type Trigger = "manual" | "input" | "expiry";

export type RelayConfig = {
	enabled: boolean;
	tailMaxChars: number;
	auto: { onInput: boolean; inputMinTokens: number; beforeExpiry: boolean; expiryMinTokens: number; minGrowthTokens: number };
};

const DEFAULTS: RelayConfig = {
	enabled: true,
	tailMaxChars: 48000,
	auto: { onInput: true, inputMinTokens: 100000, beforeExpiry: true, expiryMinTokens: 140000, minGrowthTokens: 30000 },
};

// Held is one input trigger A held back, to send after the relay.
export type Held = { text: string; images?: any[] };

// EXPIRY_MARGIN_MS: trigger B relays this long before the cache expires.
export const EXPIRY_MARGIN_MS = 20_000;

// cacheTtlMs is the prompt cache lifetime of the last request, only when
// it is reliably known: the model's promptCache declaration (tier long
// with PI_CACHE_RETENTION=long or a 1 h write in the latest usage, else
// short), else Anthropic's 1 h (a 1 h write) or 5 min; otherwise
// undefined, and nothing is timed.
export function cacheTtlMs(model: any, usage: any, env: Record<string, string | undefined>): number | undefined {
	if (!model) return undefined;
	const long = env.PI_CACHE_RETENTION === "long" || (usage?.cacheWrite1h ?? 0) > 0;
	const pc = model.promptCache;
	if (pc && (typeof pc.short === "number" || typeof pc.long === "number")) {
		const s = long ? (pc.long ?? pc.short) : pc.short;
		return typeof s === "number" && s > 0 ? s * 1000 : undefined;
	}
	if (model.api === "anthropic-messages") return (usage?.cacheWrite1h ?? 0) > 0 ? 3_600_000 : 300_000;
	return undefined;
}

// expiryDelay is how long from now trigger B waits: until EXPIRY_MARGIN_MS
// before the cache written by the request at requestAt expires; undefined
// when there is nothing to time (no cache activity, unknown lifetime, or
// already past).
export function expiryDelay(requestAt: number | undefined, ttlMs: number | undefined, usage: any, now: number): number | undefined {
	if (requestAt === undefined || ttlMs === undefined) return undefined;
	if (!usage || (usage.cacheRead ?? 0) + (usage.cacheWrite ?? 0) <= 0) return undefined;
	const delay = requestAt + ttlMs - EXPIRY_MARGIN_MS - now;
	return delay > 0 ? delay : undefined;
}

// merge joins held inputs into one message: texts blank-line separated, in
// order, images kept in order.
export function merge(held: Held[]): { text: string; images: any[] } {
	return { text: held.map((h) => h.text).join("\n\n"), images: held.flatMap((h) => h.images ?? []) };
}

// fingerprint is the resend audit entry's sha256 of a held item's text.
export function fingerprint(h: Held): { sha256: string; chars: number; images: number } {
	return { sha256: createHash("sha256").update(h.text).digest("hex"), chars: h.text.length, images: h.images?.length ?? 0 };
}

// kTokens writes 152340 as 152k.
export function kTokens(n: number | undefined): string {
	if (n === undefined || n === null || !Number.isFinite(n)) return "?";
	return n >= 1000 ? `${Math.round(n / 1000)}k` : String(n);
}

// readConfig takes the engine's answer, falling back to the defaults.
function readConfig(c: any): RelayConfig {
	return {
		enabled: typeof c?.enabled === "boolean" ? c.enabled : DEFAULTS.enabled,
		tailMaxChars: typeof c?.tailMaxChars === "number" ? c.tailMaxChars : DEFAULTS.tailMaxChars,
		auto: { ...DEFAULTS.auto, ...(c?.auto ?? {}) },
	};
}

type Pending = { token: string; trigger: Trigger; notePath?: string; tokensBefore?: number; noteChars?: number; keptFrom?: string };

type Outcome = { ok: boolean; error?: string; tokensBefore?: number; tokensAfter?: number; noteChars?: number; keptFrom?: string; notePath?: string };

// A held message that could not be sent because the session changed during
// its relay. pi reloads extensions at a session switch, so the instance that
// held it may outlive its context: it hands the text to the instance of the
// new session (through the process, as nothing else outlives a reload),
// which puts it back in the editor at its start, or at once when it started
// already.
export type Returned = { text: string; images: number };
type Handover = { pending: Returned[]; deliver?: (r: Returned) => void };
const HANDOVER = Symbol.for("pi-session.relay.returned");

export function handover(): Handover {
	const g = globalThis as any;
	g[HANDOVER] ??= { pending: [] };
	return g[HANDOVER];
}

// putBack puts a returned message in the editor, after what is typed there,
// and says so.
export function putBack(ctx: ExtensionContext, r: Returned): void {
	if (!ctx.hasUI) return;
	const draft = ctx.ui.getEditorText?.() ?? "";
	ctx.ui.setEditorText([draft, r.text].filter((s) => s.trim() !== "").join("\n\n"));
	const imgs = r.images ? `; re-attach ${r.images} image${r.images > 1 ? "s" : ""}` : "";
	notify(ctx, `context-relay: the session changed during the relay, so your message was not sent: it is back in the editor${imgs}`, "warning");
}

export function registerRelay(pi: ExtensionAPI, kit: Kit) {
	let cfg: RelayConfig = DEFAULTS;
	let warnings: string[] = [];
	let configPath = "context-relay.json";
	let active = false; // registered for this session
	let pending: Pending | undefined; // the relay in flight
	let held: Held[] | undefined; // trigger A's held inputs, while its relay runs
	let generation = 0; // bumped at session switch and shutdown
	let lastRelayTokens: number | undefined; // context size right after the last relay
	let requestAt: number | undefined; // when the last real model request went out
	let sawRequest = false; // before_provider_request fired in this run
	let timer: NodeJS.Timeout | undefined;
	let registeredOnce = false;

	const clearTimer = () => {
		if (timer) clearTimeout(timer);
		timer = undefined;
	};

	// committed: the relay's compaction is the branch's leaf (pi appends it
	// synchronously right after checking the abort signal).
	const committed = (ctx: ExtensionContext, notePath: string | undefined) => {
		const leaf: any = ctx.sessionManager.getLeafEntry();
		return notePath !== undefined && leaf?.type === "compaction" && leaf?.details?.notePath === notePath;
	};

	// discard removes a relay's note: through the engine by token (which also
	// stops a note still being written), and directly when its path is known.
	const discard = (p: Pending) => {
		void kit.ask("relay.discard", { token: p.token }, { timeoutMs: Deadline.background });
		if (p.notePath) {
			try {
				rmSync(p.notePath, { force: true });
			} catch {
				// the engine removes it too
			}
		}
	};

	// claim answers the relay's own compaction with the engine's note.
	const claim = async (event: any, ctx: ExtensionContext) => {
		const ci = typeof event.customInstructions === "string" ? event.customInstructions : "";
		if (!ci.startsWith(MARKER)) return undefined;
		const p = pending;
		if (!p || ci !== MARKER + p.token) return { cancel: true as const }; // a stale marker: never pi's LLM summary
		const signal: AbortSignal | undefined = event.signal;
		if (signal?.aborted) return { cancel: true as const };
		const onAbort = () => {
			if (!committed(ctx, p.notePath)) discard(p);
		};
		signal?.addEventListener("abort", onAbort, { once: true });
		let answer: any;
		try {
			answer = (
				await kit.call<any>(
					"relay.note",
					{
						leafId: ctx.sessionManager.getLeafId() ?? "",
						firstKeptEntryId: event.preparation?.firstKeptEntryId ?? "",
						tokensBefore: event.preparation?.tokensBefore ?? 0,
						token: p.token,
					},
					{ signal, timeoutMs: Deadline.work },
				)
			).result;
		} catch (e) {
			p.notePath = undefined;
			discard(p);
			(p as any).error = explain(e as EngineError);
			return { cancel: true as const };
		}
		p.notePath = answer.details?.notePath;
		p.tokensBefore = answer.tokensBefore;
		p.noteChars = answer.noteChars;
		p.keptFrom = answer.firstKeptEntryId;
		if (signal?.aborted) {
			discard(p);
			return { cancel: true as const };
		}
		return {
			compaction: { summary: answer.summary, firstKeptEntryId: answer.firstKeptEntryId, tokensBefore: answer.tokensBefore, details: answer.details },
		};
	};

	// runRelay compacts through pi with the relay's marker and reports how
	// it went; it never throws.
	const runRelay = (trigger: Trigger, ctx: ExtensionContext): Promise<Outcome> => {
		if (!kit.arbiter.begin("relay")) {
			const busy = kit.arbiter.busy();
			return Promise.resolve({ ok: false, error: busy === "relay" ? "a relay is already running" : `another engine's work is running (${busy})` });
		}
		const p: Pending = { token: randomUUID(), trigger };
		pending = p;
		const tokensBefore = ctx.getContextUsage()?.tokens ?? undefined;
		return new Promise<Outcome>((resolve) => {
			// The relay is logged before anyone hears how it went.
			const done = async (o: Outcome) => {
				if (pending === p) pending = undefined;
				kit.arbiter.end("relay");
				const logged = await kit.ask<{ warning?: string } | null>("relay.log", {
					trigger,
					tokensBefore: p.tokensBefore ?? tokensBefore ?? 0,
					noteChars: o.ok ? (p.noteChars ?? 0) : 0,
					keptFrom: o.ok ? (p.keptFrom ?? "") : "",
					ok: o.ok,
					error: o.error,
				}, { timeoutMs: Deadline.background });
				// A lost log line (a full disk): the engine says so once.
				if (logged?.result?.warning) notice(ctx, `context-relay: ${logged.result.warning}`, "warning");
				resolve(o);
			};
			try {
				ctx.compact({
					customInstructions: MARKER + p.token,
					onComplete: (r: any) => {
						lastRelayTokens = r?.estimatedTokensAfter;
						void done({ ok: true, tokensBefore: r?.tokensBefore, tokensAfter: r?.estimatedTokensAfter, noteChars: p.noteChars, keptFrom: p.keptFrom, notePath: p.notePath });
					},
					onError: (e: Error) => {
						if (!committed(ctx, p.notePath)) discard(p);
						void done({ ok: false, error: (p as any).error ?? e?.message ?? String(e) });
					},
				});
			} catch (e) {
				discard(p);
				void done({ ok: false, error: (e as Error).message });
			}
		});
	};

	const notice = (ctx: ExtensionContext, text: string, level: "info" | "warning" | "error" = "info") => notify(ctx, text, level);

	// grown: automatic relays wait until the context grew by minGrowthTokens
	// since the last relay (unknown right after one: no relay then).
	const grown = (tokens: number) => lastRelayTokens === undefined || tokens >= lastRelayTokens + cfg.auto.minGrowthTokens;

	// resend sends trigger A's held input exactly once, after an audit entry,
	// or puts the text back in the editor when the session changed meanwhile.
	const resend = (ctx: ExtensionContext, items: Held[], gen: number, o: Outcome) => {
		const m = merge(items);
		if (gen !== generation) {
			const r: Returned = { text: m.text, images: m.images.length };
			const h = handover();
			if (h.deliver) return h.deliver(r); // the new session's instance
			try {
				putBack(ctx, r); // the switch has not replaced this context yet
				return;
			} catch {
				// Stale: the new session's instance takes it at its start.
			}
			h.pending.push(r);
			return;
		}
		pi.appendEntry(RESEND_ENTRY, { trigger: "input", relayed: o.ok, items: items.map(fingerprint) });
		const content = m.images.length ? [{ type: "text" as const, text: m.text }, ...m.images] : m.text;
		pi.sendUserMessage(content as any);
	};

	const autoNotice = (ctx: ExtensionContext, trigger: Trigger, o: Outcome) => {
		const why = trigger === "input" ? "new message" : "cache expiry";
		if (o.ok) notice(ctx, `context-relay: auto relay (${why}) ${kTokens(o.tokensBefore)} → ~${kTokens(o.tokensAfter)} tokens`);
		else notice(ctx, `context-relay: auto relay (${why}) failed: ${o.error}${trigger === "input" ? "; your message is sent as it was" : ""}`, "warning");
	};

	// Trigger A: hold the input, relay, send the input.
	const onInput = async (event: any, ctx: ExtensionContext) => {
		if (!active) return undefined;
		if (held) {
			// Input reaching pi while trigger A's relay runs joins the held one.
			if (event.source === "extension") return undefined;
			held.push({ text: event.text ?? "", images: event.images });
			return { action: "handled" as const };
		}
		if (!cfg.enabled || !cfg.auto.onInput) return undefined;
		if (event.source !== "interactive" && event.source !== "rpc") return undefined;
		if (event.streamingBehavior || !ctx.isIdle()) return undefined;
		const text: string = event.text ?? "";
		if (text.trimStart().startsWith("/")) return undefined;
		const tokens = ctx.getContextUsage()?.tokens;
		if (tokens == null || tokens < cfg.auto.inputMinTokens || !grown(tokens)) return undefined;
		if (kit.arbiter.busy()) return undefined;
		const items: Held[] = [{ text, images: event.images }];
		held = items;
		const gen = generation;
		setImmediate(async () => {
			const o = await runRelay("input", ctx);
			held = undefined;
			try {
				autoNotice(ctx, "input", o);
			} catch {
				// A context the session switch replaced: the notice has no screen.
			}
			try {
				resend(ctx, items, gen, o);
			} catch {
				// Never an uncaught error in pi's process (it ended pi): the
				// message goes back to the editor of whichever session is next.
				const m = merge(items);
				handover().pending.push({ text: m.text, images: m.images.length });
			}
		});
		return { action: "handled" as const };
	};

	// Trigger B: relay 20 s before the prompt cache expires, while idle.
	const armExpiry = (ctx: ExtensionContext) => {
		clearTimer();
		if (!active || !cfg.enabled || !cfg.auto.beforeExpiry) return;
		const branch: any[] = ctx.sessionManager.getBranch();
		let usage: any;
		for (let i = branch.length - 1; i >= 0; i--) {
			const e = branch[i];
			if (e.type === "compaction") return; // right after a relay: nothing to keep warm
			if (e.type === "message" && e.message?.role === "assistant") {
				usage = e.message.usage;
				break;
			}
		}
		const ttl = cacheTtlMs(ctx.model, usage, process.env);
		const delay = expiryDelay(requestAt, ttl, usage, Date.now());
		if (delay === undefined) return;
		const gen = generation;
		timer = setTimeout(() => {
			timer = undefined;
			if (gen !== generation || !ctx.isIdle() || ctx.hasPendingMessages()) return;
			const tokens = ctx.getContextUsage()?.tokens;
			if (tokens == null || tokens < cfg.auto.expiryMinTokens || !grown(tokens) || kit.arbiter.busy()) return;
			void runRelay("expiry", ctx).then((o) => autoNotice(ctx, "expiry", o));
		}, delay);
		timer.unref?.();
	};

	const register = () => {
		if (registeredOnce) return;
		registeredOnce = true;
		pi.registerCommand("relay", {
			description: "Replace the conversation with a deterministic handoff note plus the latest exchange (no model call); recall fetches what left",
			handler: async (_args, ctx) => {
				if (!ctx.isIdle()) {
					notice(ctx, "context-relay: /relay runs while pi is idle; try again when the current turn ends", "warning");
					return;
				}
				// Nothing to compact: one plain word, before pi's compaction
				// would fail with its own error (two red errors, pi's and ours).
				const small = nothingToCompact(ctx.sessionManager, keepRecentTokens(pi, ctx.model));
				if (small) {
					notice(ctx, small);
					return;
				}
				const o = await runRelay("manual", ctx);
				if (o.ok) notice(ctx, `context-relay: relayed ${kTokens(o.tokensBefore)} → ~${kTokens(o.tokensAfter)} tokens; note ${o.notePath}`);
				else if (/nothing to compact|already compacted/i.test(o.error ?? "")) notice(ctx, `context-relay: nothing to compact yet (${o.error})`);
				else notice(ctx, `context-relay: relay failed: ${o.error}`, "error");
			},
		});
		pi.registerTool(tool({
			name: "recall",
			label: "Recall",
			description:
				"Fetch what left the context after a relay or compaction: recall({query}) searches earlier messages and tool output of this branch (any of the words, in any order, case and language; the entries with more and rarer words first, exact words above prefixes and other forms; a command and its output are one result) and this session's offloaded tool results; recall({entryId}) returns one entry's full text in chunks (offset continues); entryId \"note:<n>\" reads handoff note n.",
			promptSnippet: "recall: search and read earlier messages and tool output that left the context (handoff notes say what left)",
			// Plain JSON Schema (pi validates any), without types: an argument
			// of the wrong type is ignored by the engine, as if absent, rather
			// than refused (and no typebox import, so the tests run outside pi).
			parameters: {
				type: "object",
				properties: {
					query: { description: "string: words you remember, any order; not every word needs to match" },
					entryId: { description: "string: an entryId from a search result, or note:<n>; wins over query" },
					limit: { description: "number: results, 1-30 (default 8)" },
					offset: { description: "number: character offset into the entry's text, for the next chunk" },
					scope: { description: "string: \"lineage\" also searches the sessions this one was forked or continued from (also the one before a /handoff relaunch)" },
				},
			} as any,
			async execute(_id, params, signal, _onUpdate, ctx) {
				try {
					const a = await kit.call<{ text: string }>("relay.recall", { leafId: ctx.sessionManager.getLeafId() ?? "", args: params }, { signal, timeoutMs: Deadline.work });
					return { content: [{ type: "text" as const, text: a.result.text }], details: {} };
				} catch (e) {
					throw new Error(explain(e as EngineError));
				}
			},
		}));
		kit.arbiter.onCompaction("relay", claim);
		kit.arbiter.onInput("relay", onInput);
		pi.on("before_provider_request", () => {
			requestAt = Date.now();
			sawRequest = true;
			return undefined;
		});
		pi.on("agent_start", () => {
			clearTimer();
			sawRequest = false;
		});
		pi.on("agent_settled", (_e, ctx) => {
			// Providers that skip before_provider_request: the answer's time.
			if (!sawRequest) requestAt = lastAssistantTime(ctx) ?? requestAt;
			armExpiry(ctx);
		});
		// After any compaction (a relay or pi's own), what left the context is
		// indexed for recall in the background.
		pi.on("session_compact", () => {
			void kit.ask("relay.warm", {}, { timeoutMs: Deadline.background });
		});
		pi.on("session_before_switch", () => {
			generation++;
			clearTimer();
			return undefined;
		});
	};

	let deliver: ((r: Returned) => void) | undefined;
	pi.on("session_start", async (_event, ctx) => {
		// A new session (or the same one resumed) starts with nothing timed
		// and no relay of its own to wait for.
		clearTimer();
		// A message held by the previous session's relay comes back here.
		const ho = handover();
		deliver = (r) => {
			try {
				putBack(ctx, r);
			} catch {
				ho.pending.push(r);
			}
		};
		ho.deliver = deliver;
		for (const r of ho.pending.splice(0)) deliver(r);
		lastRelayTokens = undefined;
		requestAt = undefined;
		const h = kit.hello();
		active = !!h && !h.subagent && !h.headless && h.role === "main";
		if (!active) return;
		const c = await kit.ask<{ config: any; warnings: string[]; path?: string; notice?: string }>("relay.config", {}, { timeoutMs: Deadline.start });
		cfg = readConfig(c?.result.config);
		warnings = c?.result.warnings ?? [];
		configPath = c?.result.path ?? configPath;
		// The same notice as every configuration file's (jsonpos.Notice).
		if (c?.result.notice) notice(ctx, c.result.notice, "warning");
		// "enabled": false: no /relay, no recall tool, no automatic relay.
		if (cfg.enabled) register();
	});

	pi.on("session_shutdown", () => {
		generation++;
		clearTimer();
		const h = handover();
		if (h.deliver === deliver) h.deliver = undefined;
	});

	kit.report?.(async () => {
		if (!active) return [];
		const rows = [
			cfg.enabled
				? `relay     on; auto on input ${cfg.auto.onInput ? `>= ${kTokens(cfg.auto.inputMinTokens)}` : "off"}, before cache expiry ${cfg.auto.beforeExpiry ? `>= ${kTokens(cfg.auto.expiryMinTokens)}` : "off"}`
				: `relay     off ("enabled": false in ${configPath}): no /relay, no recall tool, no automatic relays; /pin still pins, and handoffs carry the pins`,
		];
		for (const w of warnings) rows.push(`warning   context-relay: ${w}`);
		return rows.map((r) => `  ${r}`);
	});
}

// estimateTokens is pi's estimate of a message's size in its compaction
// (characters / 4, an image 1200), which decides what it keeps.
export function estimateTokens(m: any): number {
	const chars = (c: any): number => {
		if (typeof c === "string") return c.length;
		let n = 0;
		for (const b of Array.isArray(c) ? c : []) {
			if (b?.type === "text" && typeof b.text === "string") n += b.text.length;
			else if (b?.type === "image") n += 4800;
		}
		return n;
	};
	let n = 0;
	switch (m?.role) {
		case "user":
		case "custom":
		case "toolResult":
			n = chars(m.content);
			break;
		case "assistant":
			for (const b of Array.isArray(m.content) ? m.content : []) {
				if (b?.type === "text") n += String(b.text ?? "").length;
				else if (b?.type === "thinking") n += String(b.thinking ?? "").length;
				else if (b?.type === "toolCall") n += String(b.name ?? "").length + JSON.stringify(b.arguments ?? {}).length;
			}
			break;
		case "bashExecution":
			n = String(m.command ?? "").length + String(m.output ?? "").length;
			break;
		case "branchSummary":
		case "compactionSummary":
			n = String(m.summary ?? "").length;
			break;
		default:
			return 0;
	}
	return Math.ceil(n / 4);
}

// keepRecentTokens is how much recent context pi's compaction keeps, as
// pi reads its settings: the model's override, else the setting, else
// 20000.
export function keepRecentTokens(pi: { getSettings?: () => any }, model: any): number {
	let c: any;
	try {
		c = pi.getSettings?.()?.compaction;
	} catch {
		c = undefined;
	}
	const whole = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
	const over = model ? c?.modelOverrides?.[`${model.provider}/${model.id}`]?.keepRecentTokens : undefined;
	return whole(over) ? over : whole(c?.keepRecentTokens) ? c.keepRecentTokens : 20000;
}

// nothingToCompact says, as a plain notice, why pi's compaction would
// find nothing to compact ("Already compacted", "Nothing to compact
// (session too small)"), from the projection pi compacts: the branch ends
// in a compaction, or what came after the last one is smaller than what
// pi keeps anyway. "" when there is something, or it cannot tell.
export function nothingToCompact(sm: any, keep: number): string {
	let branch: any[];
	let projected: any[];
	try {
		branch = sm.getBranch();
		projected = sm.buildSessionProjection?.()?.entries;
	} catch {
		return "";
	}
	if (!Array.isArray(projected) || !Array.isArray(branch)) return "";
	if (branch[branch.length - 1]?.type === "compaction") return "context-relay: nothing to compact yet: the context was just compacted and nothing came after";
	const prev = projected.findIndex((e) => e?.sourceEntry?.type === "compaction" && (e.messages?.length ?? 0) > 0);
	let tokens = 0;
	for (const e of projected.slice(prev + 1)) for (const m of e?.messages ?? []) tokens += estimateTokens(m);
	if (tokens >= keep) return "";
	if (tokens === 0 && prev < 0) return "context-relay: nothing to compact yet: the conversation is empty";
	const since = prev >= 0 ? "since the last compaction" : "so far";
	return `context-relay: nothing to compact yet: the conversation ${since} is about ${kTokens(tokens)} tokens, and pi keeps the last ${kTokens(keep)} as they are (compaction.keepRecentTokens)`;
}

// lastAssistantTime is the time of the last assistant message on the branch:
// when the last real request was answered (the request went out a little
// earlier, so the expiry computed from it errs early).
function lastAssistantTime(ctx: ExtensionContext): number | undefined {
	const branch: any[] = ctx.sessionManager.getBranch();
	for (let i = branch.length - 1; i >= 0; i--) {
		const m = branch[i]?.message;
		if (branch[i]?.type === "message" && m?.role === "assistant" && typeof m.timestamp === "number") return m.timestamp;
	}
	return undefined;
}

function explain(err: EngineError): string {
	if (err?.code === Code.Unavailable) return `pi-session's engine is unreachable (${err.message}); relay and recall work again once it is back`;
	if (err?.code === Code.MethodNotFound) return "this pi-session has no relay engine";
	return String(err?.message ?? err).replace(/^relay: /, "");
}
