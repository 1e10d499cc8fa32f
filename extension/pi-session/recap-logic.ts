// The recap engine's logic on pi's side, without pi: its configuration,
// the run boundary, the idle timer and the fire-time checks, child-agent
// deferral and the model call with its retries. recap.ts wires it to pi;
// the text (run selection, transcript, redaction, prompt, parsing,
// fallback) is the Go engine's (recap.prepare, recap.verdict).
import * as fs from "node:fs";
import * as path from "node:path";
import type { Kit } from "./kit.ts";
import { echo, log } from "./sink.ts";

export const RECAP_ENTRY = "summary-recap";
export const STATUS_KEY = "summaries";
export const STATUS_TEXT = "✦ summarizing run…";

export const REASONING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export type ReasoningLevel = (typeof REASONING_LEVELS)[number];

export type SummaryConfig = { enabled: boolean; provider: string; model: string; reasoning: ReasoningLevel };

export const DEFAULT_SUMMARY_CONFIG: SummaryConfig = { enabled: true, provider: "deepseek", model: "deepseek-flash", reasoning: "medium" };
export const DEFAULT_IDLE_DELAY_MS = 180_000;
export const MIN_IDLE_DELAY_MS = 30_000;
export const SHUTDOWN_WAIT_MS = 1_000;
export const ATTEMPT_TIMEOUT_MS = 40_000;
export const OVERALL_TIMEOUT_MS = 100_000;
export const SAVE_TIMEOUT_MS = 5_000;

// idleDelayMs is PI_SUMMARY_IDLE_MS: a positive whole number of
// milliseconds, clamped up to 30 s; anything else gives the default.
export function idleDelayMs(env: Record<string, string | undefined> = process.env): number {
	const raw = env.PI_SUMMARY_IDLE_MS?.trim();
	if (!raw || !/^\d+$/.test(raw)) return DEFAULT_IDLE_DELAY_MS;
	const n = Number(raw);
	if (!Number.isSafeInteger(n) || n <= 0) return DEFAULT_IDLE_DELAY_MS;
	return Math.max(n, MIN_IDLE_DELAY_MS);
}

// configPath is where the private config lives, resolved at call time.
export function configPath(agentDir: string): string {
	return path.join(agentDir, "summaries", "config.private.json");
}

// LoadedSummaryConfig is recap.config's answer: the config as the engine
// reads it, with the checks every configuration of pi-session gets
// (unknown keys with the nearest known one, keys given twice, a byte order
// mark; a mistake next to "enabled" keeps recaps off, never on), and what
// to tell the user. noSave: /recap must not write the file (its directory
// is one someone else could write to). unavailable: the engine did not
// answer.
export type LoadedSummaryConfig = { config: SummaryConfig; notice?: string; noSave?: string; unavailable?: boolean };

// readSummaryConfig asks the engine for the config at file. Without an
// answer recaps are off for now: the engine writes every recap's request,
// so none could be sent anyway, and nothing is assumed of a file it could
// not read.
export async function readSummaryConfig(ask: Kit["ask"], file: string): Promise<LoadedSummaryConfig> {
	const a = await ask<LoadedSummaryConfig>("recap.config", { path: file }, { timeoutMs: 3_000 });
	const r = a?.result;
	if (!r || typeof r !== "object" || !r.config || typeof r.config.enabled !== "boolean") return { config: { ...DEFAULT_SUMMARY_CONFIG, enabled: false }, unavailable: true };
	return r;
}

// saveSummaryConfig writes the config atomically (a temporary file, then a
// rename) with mode 0600 in a 0700 directory, within SAVE_TIMEOUT_MS, and
// stops when signal aborts. It gives up on time even when the file system
// does not answer at all (a hung mount: an open that never returns, which
// no signal can interrupt); the write left behind then never renames over
// the config, so the previous file stays as it was.
export async function saveSummaryConfig(file: string, config: SummaryConfig, o: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
	const ms = o.timeoutMs ?? SAVE_TIMEOUT_MS;
	const timeout = AbortSignal.timeout(ms);
	const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
	signal.throwIfAborted();
	const run = () => writeAtomic(file, JSON.stringify(config, null, 2) + "\n", signal);
	const write = (saving = saving.then(run, run));
	await new Promise<void>((resolve, reject) => {
		const onAbort = () =>
			reject(o.signal?.aborted ? o.signal.reason : new Error(`recap: saving ${file} did not finish within ${ms / 1000} s`));
		signal.addEventListener("abort", onAbort, { once: true });
		write.then(
			() => {
				signal.removeEventListener("abort", onAbort);
				resolve();
			},
			(e) => {
				signal.removeEventListener("abort", onAbort);
				reject(e);
			},
		);
	});
}

// saving is the last save of this process: saves run one after another,
// so the temporary file of this process (its name is fixed) is never
// written by two at once (a save stuck behind a hung one fails on its own
// time).
let saving: Promise<void> = Promise.resolve();

// configTempPath is the temporary file saveSummaryConfig writes before the
// rename: beside the config, named after this process.
export function configTempPath(file: string): string {
	return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
}

async function writeAtomic(file: string, data: string, signal: AbortSignal): Promise<void> {
	signal.throwIfAborted();
	const dir = path.dirname(file);
	await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
	signal.throwIfAborted();
	const tmp = configTempPath(file);
	try {
		const fh = await fs.promises.open(tmp, "w", 0o600);
		try {
			await fh.chmod(0o600); // a leftover of an earlier process with this pid
			await fh.writeFile(data, { signal });
			await fh.sync();
		} finally {
			await fh.close();
		}
		signal.throwIfAborted();
		await fs.promises.rename(tmp, file);
	} catch (e) {
		await fs.promises.rm(tmp, { force: true }).catch(() => {});
		throw e;
	}
}

// MAX_RUN_STARTS bounds the run starts a boundary remembers: the latest
// runs of a long batch are the ones a recap leads with.
export const MAX_RUN_STARTS = 100;

// RunBoundary remembers where the pending runs began: the leaf when the
// first run since the last recap started (the baseline: several runs pile
// up behind it and one recap covers them all), and the leaf when each
// later one started, so the recap can tell which request started which
// run (a message steered in or queued as a follow-up while a run works is
// part of that run: pi starts no new one for it).
export class RunBoundary {
	private set = false;
	private leaf: string | null = null;
	private later: string[] = [];

	begin(leafId: string | null | undefined) {
		if (!this.set) {
			this.set = true;
			this.leaf = leafId ?? null;
			return;
		}
		if (!leafId || leafId === this.leaf || this.later[this.later.length - 1] === leafId) return;
		this.later.push(leafId);
		if (this.later.length > MAX_RUN_STARTS) this.later.shift();
	}

	pending(): boolean {
		return this.set;
	}

	// baseline is the leaf the run began after (null: the session was empty).
	baseline(): string | null {
		return this.leaf;
	}

	// starts are the leaves after which each later run began, oldest first.
	starts(): string[] {
		return [...this.later];
	}

	clear() {
		this.set = false;
		this.leaf = null;
		this.later = [];
	}
}

// Child agents (SDK sessions bound in this process, as pi-subagents makes)
// report whether they are running through a process-wide registry, since
// pi loads the extension once per session.
const ACTIVITY = Symbol.for("pi-session.agent-activity");
type Activity = { running: Map<object, boolean>; listeners: Set<() => void> };

export function activity(g: Record<symbol, unknown> = globalThis as any): Activity {
	return ((g[ACTIVITY] as Activity | undefined) ??= { running: new Map(), listeners: new Set() });
}

// reportActivity records whether the agent of token runs and tells the
// listeners when that changes.
export function reportActivity(token: object, running: boolean, a: Activity = activity()) {
	const was = a.running.get(token) ?? false;
	if (running) a.running.set(token, true);
	else a.running.delete(token);
	if (was !== running) for (const l of [...a.listeners]) l();
}

export function anyChildRunning(a: Activity = activity()): boolean {
	return a.running.size > 0;
}

export function onActivity(fn: () => void, a: Activity = activity()): () => void {
	a.listeners.add(fn);
	return () => a.listeners.delete(fn);
}

// Timers abstracts setTimeout for tests; the real one unrefs, so a pending
// recap never holds the process open.
export type Timers = { set: (fn: () => void, ms: number) => unknown; clear: (h: unknown) => void };
export const realTimers: Timers = {
	set: (fn, ms) => {
		const t = setTimeout(fn, ms);
		t.unref();
		return t;
	},
	clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

// Prepared is the engine's recap.prepare answer (recap.Prepared in Go).
export type Prepared = {
	systemPrompt: string;
	userMessage: string;
	empty: boolean;
	gone: boolean;
	leafId: string;
	entries: number;
	transcriptBytes: number;
	cut: boolean;
	redactions: number;
	fallback: RunRecap;
};

export type RunRecap = { recap: string; next: string };
export type RecapEntryData = RunRecap & { provider: string; model: string; reasoning: ReasoningLevel; fallback?: boolean };

// Verdict is the engine's recap.verdict answer (recap.Verdict in Go).
export type Verdict = { ok: boolean; recap: RunRecap; retry: boolean; aborted: boolean; error?: string };
export type Answer = { text: string; stopReason: string; errorMessage?: string; reasoning: boolean };

// SummaryError is a failed recap the user is told about; the local
// recap is written instead. An abort is not one.
export class SummaryError extends Error {
	constructor(message: string) {
		super(message);
		this.name = "SummaryError";
	}
}

export class RecapAborted extends Error {
	constructor() {
		super("recap aborted");
		this.name = "RecapAborted";
	}
}

// ModelCall is what summarizeRun needs from pi: the model lookup, one
// streamed call resolved to its final message (ctx.modelRegistry), and
// the engine's verdict on an answer (undefined when the engine is down).
export type ModelCall<M> = {
	find: (provider: string, model: string) => M | undefined;
	// hasAuth says whether pi has credentials for the model (a model pi
	// knows, such as the default, may have none configured).
	hasAuth?: (model: M) => boolean;
	complete: (
		model: M,
		context: { systemPrompt: string; messages: unknown[] },
		options: { reasoning?: ReasoningLevel; maxTokens: number; timeoutMs: number; maxRetries: number; signal: AbortSignal },
	) => Promise<{ content: { type: string; text?: string }[]; stopReason: string; errorMessage?: string }>;
	verdict: (answer: Answer) => Promise<Verdict | undefined>;
	attemptTimeoutMs?: number;
	overallTimeoutMs?: number;
};

// summarizeRun asks the configured model for the recap: reasoning passed
// unless off; maxTokens 8000 with reasoning (thinking counts against it),
// 1000 without; 40 s an attempt, 100 s in all; an answer that does not
// parse, or a length stop, from a reasoning attempt is retried once with
// reasoning off; a transport failure is not retried. It throws a
// SummaryError on failure and RecapAborted when signal aborts.
export async function summarizeRun<M>(call: ModelCall<M>, req: { systemPrompt: string; userMessage: string }, config: SummaryConfig, signal: AbortSignal): Promise<RunRecap> {
	const model = call.find(config.provider, config.model);
	if (!model) throw new SummaryError(`The summary model ${echo(`${config.provider}/${config.model}`)} is not available; choose one with /recap.`);
	if (call.hasAuth && !call.hasAuth(model)) {
		throw new SummaryError(`The summary model ${echo(`${config.provider}/${config.model}`)} is not available: pi has no credentials for ${echo(config.provider)}; choose a model you have with /recap.`);
	}
	const overallMs = call.overallTimeoutMs ?? OVERALL_TIMEOUT_MS;
	const attemptMs = call.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS;
	const overall = AbortSignal.timeout(overallMs);
	let reasoning = config.reasoning;
	for (let attempt = 0; attempt < 2; attempt++) {
		if (signal.aborted) throw new RecapAborted();
		const on = reasoning !== "off";
		const attemptTimeout = AbortSignal.timeout(attemptMs);
		const stop = AbortSignal.any([signal, overall, attemptTimeout]);
		// A provider that ignores the signal must not hold the recap (and the
		// next ones, which wait for it) past an abort or a timeout.
		const reply = await untilAborted(
			call.complete(
				model,
				{ systemPrompt: req.systemPrompt, messages: [{ role: "user", content: [{ type: "text", text: req.userMessage }], timestamp: Date.now() }] },
				{ ...(on ? { reasoning } : {}), maxTokens: on ? 8_000 : 1_000, timeoutMs: attemptMs, maxRetries: 1, signal: stop },
			),
			stop,
		);
		if (signal.aborted) throw new RecapAborted();
		if (overall.aborted) throw new SummaryError(`The summary model did not answer within ${overallMs / 1000} s.`);
		if (attemptTimeout.aborted) throw new SummaryError(`The summary model did not answer within ${attemptMs / 1000} s.`);
		const text = reply.content.filter((b) => b.type === "text").map((b) => b.text ?? "").join("");
		const v = await call.verdict({ text, stopReason: reply.stopReason, errorMessage: reply.errorMessage, reasoning: on });
		if (!v) throw new SummaryError("pi-session's engine is unreachable, so the recap model's answer could not be read.");
		if (v.ok) return v.recap;
		if (v.aborted) throw new RecapAborted();
		if (v.retry && on) {
			reasoning = "off";
			continue;
		}
		throw new SummaryError(v.error ?? "The summary model did not return valid recap JSON.");
	}
	throw new SummaryError("The summary model did not return valid recap JSON.");
}

// untilAborted resolves with p, or with an aborted reply as soon as signal
// aborts, whichever comes first.
function untilAborted<T extends { stopReason: string }>(p: Promise<T>, signal: AbortSignal): Promise<T> {
	if (signal.aborted) return Promise.resolve({ content: [], stopReason: "aborted" } as unknown as T);
	return new Promise<T>((resolve, reject) => {
		const onAbort = () => resolve({ content: [], stopReason: "aborted" } as unknown as T);
		signal.addEventListener("abort", onAbort, { once: true });
		p.then(
			(v) => {
				signal.removeEventListener("abort", onAbort);
				resolve(v);
			},
			(e) => {
				signal.removeEventListener("abort", onAbort);
				reject(e);
			},
		);
	});
}

// RecapHost is what the controller needs from pi and the engine.
export type RecapHost = {
	isIdle: () => boolean;
	hasPendingMessages: () => boolean;
	leafId: () => string | null;
	config: () => Promise<SummaryConfig>;
	// prepare asks the engine; undefined when it is unreachable.
	prepare: (run: { leafId: string; after: string | null; last: false; starts: string[] }, signal: AbortSignal) => Promise<Prepared | undefined>;
	summarize: (p: Prepared, config: SummaryConfig, signal: AbortSignal) => Promise<RunRecap>;
	append: (data: RecapEntryData) => void;
	status: (text: string | undefined) => void;
	warn: (text: string) => void;
	// begin takes the arbiter's slot (false when a relay or a handoff
	// holds it); end releases it.
	begin: () => boolean;
	end: () => void;
	childRunning: () => boolean;
};

// RecapController schedules and writes recaps. Events come in from pi
// (recap.ts); the timer only decides whether a recap is attempted, and the
// checks when it fires are the authority.
export class RecapController {
	readonly boundary = new RunBoundary();
	private active = false;
	// warned is the last failure the user was told about in this session: the
	// same cause again (a model that is not available, say) writes its
	// fallback card quietly instead of warning after every run.
	private warned: string | undefined;
	private timer: unknown;
	// generation counts user activity, so that a timer is not armed after
	// activity that came while the config was being read.
	private generation = 0;
	private tasks = new Set<{ ac: AbortController; done: Promise<void> }>();
	private host: RecapHost;
	private timers: Timers;
	private delayMs: () => number;

	constructor(host: RecapHost, timers: Timers = realTimers, delayMs: () => number = () => idleDelayMs()) {
		this.host = host;
		this.timers = timers;
		this.delayMs = delayMs;
	}

	// sessionStart: recaps run for a main session in the TUI only.
	sessionStart(active: boolean) {
		this.active = active;
		this.generation++;
		this.warned = undefined;
		this.cancelTimer();
		this.boundary.clear();
	}

	// beforeAgentStart: a run begins; input during a recap drops it.
	beforeAgentStart(leafId: string | null) {
		if (!this.active) return;
		this.userActivity();
		this.boundary.begin(leafId);
	}

	// settled: pi will not continue by itself; wait for a quiet stretch.
	settled(): Promise<void> {
		return this.arm();
	}

	// userActivity (typing, a ! command, /recap disabling) cancels the
	// timer and aborts recaps in flight; the boundary stays, so the next
	// quiet stretch covers the dropped run too.
	userActivity() {
		this.generation++;
		this.cancelTimer();
		for (const t of this.tasks) t.ac.abort();
	}

	// childActivity: a child agent started or settled.
	childActivity(): Promise<void> {
		if (this.host.childRunning()) {
			this.generation++;
			this.cancelTimer();
			return Promise.resolve();
		}
		if (!this.safeIdle()) return Promise.resolve();
		return this.arm();
	}

	// arm starts the timer for a pending run when recaps are enabled (a
	// disabled config never arms one), unless the user was active while
	// the config was read.
	private async arm() {
		if (!this.active || !this.boundary.pending()) return;
		const gen = this.generation;
		const config = await this.host.config();
		if (config.enabled && gen === this.generation && this.active && this.boundary.pending()) this.schedule();
	}

	// shutdown cancels everything and waits up to SHUTDOWN_WAIT_MS for
	// recaps in flight.
	async shutdown(waitMs = SHUTDOWN_WAIT_MS) {
		this.active = false;
		this.generation++;
		this.cancelTimer();
		this.boundary.clear();
		const done = [...this.tasks].map((t) => {
			t.ac.abort();
			return t.done;
		});
		if (done.length > 0) {
			let timer: unknown;
			await Promise.race([Promise.allSettled(done), new Promise<void>((r) => (timer = this.timers.set(r, waitMs)))]);
			this.timers.clear(timer);
		}
		this.host.status(undefined);
	}

	armed(): boolean {
		return this.timer !== undefined;
	}

	inFlight(): number {
		return this.tasks.size;
	}

	schedule() {
		this.cancelTimer();
		this.timer = this.timers.set(() => {
			this.timer = undefined;
			void this.fire();
		}, this.delayMs());
	}

	private cancelTimer() {
		if (this.timer !== undefined) this.timers.clear(this.timer);
		this.timer = undefined;
	}

	private safeIdle(): boolean {
		try {
			return this.host.isIdle() && !this.host.hasPendingMessages();
		} catch {
			return false; // a stale context after a session switch
		}
	}

	// fire writes a recap if everything still allows it.
	async fire(): Promise<void> {
		if (!this.active || !this.boundary.pending() || this.tasks.size > 0) return;
		const config = await this.host.config();
		if (!config.enabled || !this.active || !this.boundary.pending()) return;
		if (!this.safeIdle() || this.host.childRunning()) return; // the next settle or child update re-arms
		if (!this.host.begin()) {
			this.schedule(); // a relay or a handoff runs: wait for the next quiet stretch
			return;
		}
		const ac = new AbortController();
		let finish!: () => void;
		const task = { ac, done: new Promise<void>((r) => (finish = r)) };
		this.tasks.add(task);
		this.host.status(STATUS_TEXT);
		try {
			await this.write(config, ac.signal);
		} catch (e) {
			log(`pi-session: recap: ${(e as Error).message}`);
		} finally {
			this.host.end();
			this.tasks.delete(task);
			if (this.tasks.size === 0) this.host.status(undefined);
			finish();
		}
	}

	private async write(config: SummaryConfig, signal: AbortSignal) {
		const after = this.boundary.baseline();
		const leafId = this.host.leafId() ?? "";
		const p = await this.host.prepare({ leafId, after, last: false, starts: this.boundary.starts() }, signal);
		if (signal.aborted || !p) return; // the engine is down: try again after the next run
		if (p.gone || p.empty) {
			this.boundary.clear();
			return;
		}
		const source = { provider: config.provider, model: config.model, reasoning: config.reasoning };
		let data: RecapEntryData;
		try {
			data = { ...(await this.host.summarize(p, config, signal)), ...source };
		} catch (e) {
			if (e instanceof RecapAborted || signal.aborted) return;
			const why = (e as Error).message;
			data = { ...p.fallback, ...source, fallback: true };
			if (why !== this.warned) this.host.warn(`Recap: ${sentence(why)} A local recap was written instead.`);
			this.warned = why;
		}
		if (signal.aborted || !this.active) return;
		this.host.append(data);
		this.boundary.clear();
	}
}

// toggleRecaps is /recap's "Disable recaps" and "Enable recaps": it saves
// config with enabled flipped and tells the user. Disabling also cancels
// the armed timer and aborts recaps in flight; the run boundary stays, so
// re-enabling recaps everything since. A failed save changes nothing.
export async function toggleRecaps(
	file: string,
	config: SummaryConfig,
	controller: { userActivity: () => void },
	notify: (text: string, level: "info" | "error") => void,
): Promise<void> {
	const next = { ...config, enabled: !config.enabled };
	try {
		await saveSummaryConfig(file, next);
	} catch {
		notify("Could not save the private summary config.", "error");
		return;
	}
	if (!next.enabled) controller.userActivity();
	notify(next.enabled ? "Recaps enabled." : "Recaps disabled.", "info");
}

// Models for the picker, cheapest output first (unknown cost last), then
// by name; the label names the output cost when the model reports one.
export type PickableModel = { provider: string; id: string; cost?: { output?: number } };

export function cheapestFirst<M extends PickableModel>(models: M[]): M[] {
	const cost = (m: M) => (m.cost?.output && m.cost.output > 0 ? m.cost.output : Number.POSITIVE_INFINITY);
	return [...models].sort((a, b) => cost(a) - cost(b) || `${a.provider}/${a.id}`.localeCompare(`${b.provider}/${b.id}`));
}

export function modelLabel(m: PickableModel): string {
	const out = m.cost?.output;
	if (!out || out <= 0) return `${m.provider}/${m.id}`;
	const price = out >= 1 ? out.toFixed(2) : out.toPrecision(2);
	return `${m.provider}/${m.id} · $${price}/Mtok out`;
}

// isRecapEntryData checks a recap entry's payload before it is drawn.
export function isRecapEntryData(d: unknown): d is RecapEntryData {
	if (!d || typeof d !== "object") return false;
	const o = d as Record<string, unknown>;
	return typeof o.recap === "string" && o.recap !== "" && typeof o.next === "string";
}

// sentence ends a message with a full stop unless it has its own.
export function sentence(s: string): string {
	const t = s.trimEnd();
	return /[.!?…)]$/.test(t) ? t : `${t}.`;
}
