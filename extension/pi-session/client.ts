// The one socket client between pi and pi-session's engine host: it
// connects, says hello, reconnects with backoff, and puts a deadline on
// every call. It fails fast while the engine is unreachable so that hook
// handlers can fall back to pi's own behaviour at once, and it treats a
// host that stops answering like a dead one: a call that waits out its
// deadline makes it ping the host, and a host that does not answer the
// ping either is left for a fresh one (Hosts says which). Node built-ins
// only, so tests and benchmarks run it outside pi.
import * as net from "node:net";
import { Decoder, encode, type Frame, type Message } from "./frames.ts";

// PROTOCOL is the wire protocol version; hooks.Protocol in Go.
export const PROTOCOL = 1;

// Error codes the host sends (hooks/protocol.go), and the client's own.
export const Code = {
	MethodNotFound: -32601,
	InvalidParams: -32602,
	Internal: -32603,
	Engine: -32000,
	Deadline: -32001,
	TooLarge: -32002,
	HelloFirst: -32003,
	Version: -32004,
	Refused: -32005,
	Cancelled: -32800,
	Unavailable: -1, // the client is not connected, or the host is not answering (nothing was sent)
} as const;

export class EngineError extends Error {
	code: number;
	data?: unknown;
	local: boolean; // the client's own verdict (its deadline passed), not the host's answer
	constructor(code: number, message: string, data?: unknown, local = false) {
		super(message);
		this.name = "EngineError";
		this.code = code;
		this.data = data;
		this.local = local;
	}
}

// StuckError is why the client left a host that stopped answering.
export class StuckError extends Error {
	host?: HelloResult;
	socket?: string;
	constructor(message: string, host?: HelloResult, socket?: string) {
		super(message);
		this.name = "StuckError";
		this.host = host;
		this.socket = socket;
	}
}

export type Hello = {
	protocol?: number;
	client: string;
	extension: string;
	pi: string;
	pid: number;
	sessionId: string;
	sessionFile: string;
	sessionName: string;
	cwd: string;
	role: "main" | "child";
	mode: string;
	subagent: boolean;
	headless: boolean;
};

export type HelloResult = {
	protocol: number;
	version: string;
	host: "wrapper" | "serve" | string;
	pid: number;
	owned: boolean;
	startedAt: string;
	socket: string;
	limits: { maxMessage: number; maxBulk: number; maxTimeoutMs: number };
	methods: string[];
	hooks: Record<string, string[]>;
};

export type State = "idle" | "connecting" | "connected" | "down" | "closed";

// Hosts is what the client tells about the hosts it uses, and asks: the
// finder behind connect (serve.ts) keeps a stuck host out of the way.
export type Hosts = {
	// stuck: the host at socket stopped answering; the client has left it.
	stuck?: (socket: string, info: HelloResult | undefined) => void;
	// found: the client is connected to socket.
	found?: (socket: string) => void;
	// retired: the client left socket for a better host (see better).
	retired?: (socket: string) => void;
	// better: a host to prefer while connected to socket (the wrapper's,
	// while on a fallback), tried now and then; undefined for none.
	better?: (socket: string) => string | undefined;
};

export type Options = {
	// connect resolves the socket path, starting an engine if need be.
	connect: () => Promise<string>;
	hello: () => Hello;
	hosts?: Hosts;
	timeoutMs?: number; // a call's deadline unless it names one; default 5000
	connectTimeoutMs?: number; // finding or starting the host, and connecting; default 5000
	helloTimeoutMs?: number; // hello once connected; default 5000 (a host's hello may wait 2 s for the status records' lock, held by a host that is stopped)
	probeMs?: number; // how long the host gets to answer a ping once a call went unanswered; default 1000
	probeAfterMs?: number; // a call unanswered this long makes the client ping the host; default 1000
	graceMs?: number; // how long a call waits for a ping in flight before it fails fast; default 50
	backoffMs?: number; // first retry delay; doubles up to maxBackoffMs; default 100
	maxBackoffMs?: number; // default 5000
	betterMs?: number; // first try of a better host; doubles up to 60 s; default 5000
	slowMs?: number; // how long an engine that let a call wait out its deadline gets no calls; doubles up to 60 s; default 5000
	onState?: (state: State, error?: Error) => void;
	// onLate: calls waited out their deadlines (the first one, and how
	// many) while the host still answered a ping: the engine is slow.
	onLate?: (first: Late, count: number) => void;
};

// Late is a call that waited out its deadline.
export type Late = { method: string; timeoutMs: number; at: number };

// Stats counts what the client did instead of waiting (for /pi-session).
export type Stats = {
	waited: number; // calls that waited out their deadline
	skipped: number; // calls that failed at once: no host, a host not answering, or a deadline passed before sending
	stuck: number; // hosts left because they stopped answering
	last?: Late; // the last call that waited out its deadline
};

// deadline is an absolute time (Date.now()) a call must be answered by;
// with timeoutMs, the nearer one counts. A call whose deadline has passed
// before it is sent (one that waited in an engine's queue) fails at once.
export type CallOptions = { timeoutMs?: number; deadline?: number; bulk?: Uint8Array; signal?: AbortSignal };
export type Answer<T> = { result: T; bulk?: Buffer };

type Pending = { sock: net.Socket; resolve: (f: Frame) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout; watch?: NodeJS.Timeout };

const MAX_BETTER_MS = 60_000;
const MAX_SLOW_MS = 60_000;

// engineOf is the engine a method belongs to ("budget" of budget.turnEnd);
// "" for the host's own methods.
function engineOf(method: string): string {
	const dot = method.indexOf(".");
	return dot > 0 && !method.startsWith("rpc.") ? method.slice(0, dot) : "";
}

export class Client {
	state: State = "idle";
	info: HelloResult | undefined;
	socket: string | undefined; // the path of the host in use
	connectedAt = 0;
	lastError: Error | undefined;
	stats: Stats = { waited: 0, skipped: 0, stuck: 0 };

	private opts: Required<Omit<Options, "onState" | "onLate" | "hosts">> & Pick<Options, "onState" | "onLate" | "hosts">;
	private sock: net.Socket | undefined;
	private everConnected = false;
	private nextId = 1;
	private pending = new Map<number, Pending>();
	private attempt: Promise<void> | undefined;
	private retry: NodeJS.Timeout | undefined;
	private delay: number;
	private probing: { sock: net.Socket; verdict: Promise<void>; slow: boolean } | undefined;
	private late: Late[] = [];
	private betterTimer: NodeJS.Timeout | undefined;
	private betterDelay: number;
	private retiring = new Map<net.Socket, () => void>();
	private slow = new Map<string, { until: number; backoff: number; trial: boolean }>(); // by engine

	constructor(opts: Options) {
		this.opts = {
			timeoutMs: 5000,
			connectTimeoutMs: 5000,
			helloTimeoutMs: 5000,
			probeMs: 1000,
			probeAfterMs: 1000,
			graceMs: 50,
			backoffMs: 100,
			maxBackoffMs: 5000,
			betterMs: 5000,
			slowMs: 5000,
			...opts,
		};
		this.delay = this.opts.backoffMs;
		this.betterDelay = this.opts.betterMs;
	}

	// start begins connecting in the background; the client keeps itself
	// connected from then on until close.
	start(): void {
		if (this.state === "idle" || this.state === "down") this.connectNow();
	}

	// call sends a request and resolves with the host's answer. It rejects
	// at once with Code.Unavailable when the engine is down or not
	// answering, after the deadline with Code.Deadline, and with the
	// host's code on an error. Only the first connection is waited for.
	async call<T = unknown>(method: string, params?: unknown, o: CallOptions = {}): Promise<Answer<T>> {
		const started = Date.now();
		let timeoutMs = o.timeoutMs ?? this.opts.timeoutMs;
		if (o.deadline !== undefined) timeoutMs = Math.min(timeoutMs, o.deadline - started);
		if (timeoutMs <= 0) {
			this.stats.skipped++;
			throw new EngineError(Code.Deadline, `pi-session: ${method} was not sent: its deadline passed while it waited its turn`, undefined, true);
		}
		if (!this.everConnected) await this.ready(timeoutMs);
		if (this.probing && !this.probing.slow) {
			// A ping is in flight: an answering host answers it within a
			// moment; wait that long once, then fail fast until the verdict.
			const p = this.probing;
			const answered = await Promise.race([p.verdict.then(() => true), sleep(Math.min(this.opts.graceMs, timeoutMs)).then(() => false)]);
			if (!answered) p.slow = true;
		}
		if (this.state !== "connected" || !this.sock || this.probing) {
			this.stats.skipped++;
			const why = this.probing ? "the engine host is not answering" : `pi-session engine unavailable${this.lastError ? ": " + this.lastError.message : ""}`;
			throw new EngineError(Code.Unavailable, why);
		}
		// An engine that let a call wait out its deadline gets no more
		// calls for a while, then one at a time until one is answered in
		// time: a slow engine (a host blocked on a slow disk still answers
		// pings) costs pi one deadline now and then, not one a call.
		const engine = engineOf(method);
		const slow = engine ? this.slow.get(engine) : undefined;
		if (slow) {
			if (slow.trial || Date.now() < slow.until) {
				this.stats.skipped++;
				throw new EngineError(Code.Unavailable, `pi-session: the ${engine} engine is slow (a call waited out its deadline); ${method} goes on without it`);
			}
			slow.trial = true;
		}
		const left = Math.max(1, timeoutMs - (Date.now() - started));
		let f: Frame;
		try {
			f = await this.send(this.sock, method, params, left, o.bulk, o.signal);
		} catch (e) {
			if (slow) slow.trial = false;
			const err = e as EngineError;
			if (err.code === Code.Deadline && !err.local && engine) {
				// The host's own deadline answered first: it works, the engine is slow.
				const l = this.noteLate(method, left);
				this.opts.onLate?.(l, 1);
			} else if (engine && err.code !== Code.Deadline && err.code !== Code.Unavailable && err.code !== Code.Cancelled) {
				this.slow.delete(engine); // it answered in time, if with an error
			}
			throw e;
		}
		if (engine) this.slow.delete(engine);
		return { result: f.msg.result as T, bulk: f.bulk };
	}

	// ready waits up to timeoutMs for the first connection attempt and says
	// whether the client is connected to a host that answers. After the
	// first connection it never waits: pi goes on while the client
	// reconnects.
	async ready(timeoutMs = this.opts.timeoutMs): Promise<boolean> {
		if (this.state === "connecting" && this.attempt && !this.everConnected) {
			await Promise.race([this.attempt, sleep(timeoutMs)]);
		}
		return this.state === "connected" && !this.probing;
	}

	// notify sends a message that gets no answer; false when not connected.
	notify(method: string, params?: unknown): boolean {
		if (this.state !== "connected" || !this.sock || this.probing) return false;
		this.write(this.sock, encode({ method, params }));
		return true;
	}

	// close says bye (when connected, within timeoutMs) and disconnects for good.
	async close(o: { bye?: boolean; timeoutMs?: number } = {}): Promise<void> {
		if (this.state === "closed") return;
		if (o.bye !== false && this.state === "connected") {
			await this.call("bye", undefined, { timeoutMs: o.timeoutMs ?? 1000 }).catch(() => {});
		}
		this.setState("closed");
		if (this.retry) clearTimeout(this.retry);
		if (this.betterTimer) clearTimeout(this.betterTimer);
		this.sock?.destroy();
		for (const done of [...this.retiring.values()]) done();
		this.failAll(new EngineError(Code.Unavailable, "pi-session engine connection closed"));
	}

	private connectNow() {
		if (this.retry) clearTimeout(this.retry);
		this.retry = undefined;
		this.setState("connecting");
		const attempt = this.open().then(
			(c) => {
				if (this.state === "closed") {
					c.sock.destroy(); // closed while saying hello
					return;
				}
				this.use(c);
				this.delay = this.opts.backoffMs;
				this.lastError = undefined;
				this.setState("connected");
			},
			(err: Error) => this.down(err),
		);
		this.attempt = attempt;
	}

	// use makes c the connection calls go to.
	private use(c: Conn) {
		this.slow.clear(); // another host: its engines have not been slow yet
		this.sock = c.sock;
		this.info = c.info;
		this.socket = c.path;
		this.everConnected = true;
		this.connectedAt = Date.now();
		this.opts.hosts?.found?.(c.path);
		this.scheduleBetter();
	}

	// open connects (to path, else where connect says) and says hello; it
	// rejects on any failure. A host that accepts the connection but does
	// not answer hello is stuck: the rejection is a StuckError.
	private async open(path?: string): Promise<Conn> {
		const deadline = Date.now() + this.opts.connectTimeoutMs;
		const p = path ?? (await withTimeout(this.opts.connect(), this.opts.connectTimeoutMs, "starting the engine"));
		const sock = await new Promise<net.Socket>((resolve, reject) => {
			const s = net.createConnection({ path: p });
			const timer = setTimeout(() => (s.destroy(), reject(new Error(`connect ${p}: timed out`))), Math.max(1, deadline - Date.now()));
			s.once("connect", () => (clearTimeout(timer), resolve(s)));
			s.once("error", (e) => (clearTimeout(timer), reject(new Error(`connect ${p}: ${e.message}`))));
		});
		if (this.state === "closed") {
			sock.destroy();
			throw new Error("closed");
		}
		this.attach(sock);
		const hello = { ...this.opts.hello(), protocol: PROTOCOL };
		let f: Frame;
		try {
			f = await this.send(sock, "hello", hello, this.opts.helloTimeoutMs, undefined, undefined, true);
		} catch (e) {
			sock.destroy();
			if ((e as EngineError).code === Code.Deadline && (e as EngineError).local) {
				this.opts.hosts?.stuck?.(p, undefined);
				throw new StuckError(`the engine host at ${p} accepted the connection but did not answer hello within ${human(this.opts.helloTimeoutMs)}`, undefined, p);
			}
			throw e;
		}
		const info = f.msg.result as HelloResult;
		if (info?.protocol !== PROTOCOL) {
			sock.destroy();
			throw new EngineError(Code.Version, `pi-session protocol mismatch: the engine host speaks ${info?.protocol}, this extension ${PROTOCOL}; use the extension bundled with your pi-session (pi-session setup)`);
		}
		return { sock, info, path: p };
	}

	private attach(sock: net.Socket) {
		sock.setNoDelay(true);
		sock.unref(); // never keeps pi alive; a pending call's timer does while it waits
		const dec = new Decoder();
		sock.on("data", (chunk: Buffer) => {
			let frames: Frame[];
			try {
				frames = dec.push(chunk);
			} catch (e) {
				sock.destroy(e as Error);
				return;
			}
			for (const f of frames) this.deliver(f);
		});
		sock.on("error", () => {}); // "close" follows and handles it
		sock.on("close", () => {
			this.failSock(sock, new EngineError(Code.Unavailable, "pi-session engine connection lost"));
			this.retiring.get(sock)?.();
			if (this.sock !== sock) return;
			this.sock = undefined;
			this.probing = undefined;
			if (this.betterTimer) clearTimeout(this.betterTimer);
			if (this.state === "connected") this.down(new Error("connection lost"));
		});
	}

	private deliver(f: Frame) {
		const id = f.msg.id;
		if (typeof id !== "number") return; // refusals (id null) end with "close"
		const p = this.pending.get(id);
		if (!p) return; // answered after its deadline, or on a connection left behind: dropped
		this.settle(id, p);
		if (f.msg.error) p.reject(new EngineError(f.msg.error.code, f.msg.error.message, f.msg.error.data));
		else p.resolve(f);
	}

	// send writes a request on sock and waits for its answer. A call that
	// waits out its deadline, or waits long (probeAfterMs), makes the
	// client ping the host; internal calls (hello, the ping) do not.
	private send(sock: net.Socket, method: string, params: unknown, timeoutMs: number, bulk?: Uint8Array, signal?: AbortSignal, internal = false): Promise<Frame> {
		const id = this.nextId++;
		const ms = Math.ceil(timeoutMs);
		const bufs = encode({ id, method, params, timeoutMs: ms, deadline: Date.now() + ms }, bulk);
		const limits = this.info?.limits;
		if (limits && method !== "hello") {
			if (bufs[0].length - 1 > limits.maxMessage)
				return Promise.reject(new EngineError(Code.TooLarge, `pi-session: message of ${bufs[0].length - 1} bytes exceeds the limit of ${limits.maxMessage} bytes (maxMessage)`));
			if (bulk && bulk.length > limits.maxBulk)
				return Promise.reject(new EngineError(Code.TooLarge, `pi-session: bulk of ${bulk.length} bytes exceeds the limit of ${limits.maxBulk} bytes (maxBulk)`));
		}
		return new Promise<Frame>((resolve, reject) => {
			const giveUp = (e: EngineError) => {
				const p = this.pending.get(id);
				if (!p) return;
				this.settle(id, p);
				if (!internal && !sock.destroyed) this.write(sock, encode({ method: "rpc.cancel", params: { id } }));
				reject(e);
			};
			const p: Pending = { sock, resolve, reject };
			p.timer = setTimeout(() => {
				giveUp(new EngineError(Code.Deadline, `pi-session: ${method} did not answer within ${human(ms)}`, { timeoutMs: ms }, true));
				if (!internal) this.missed(sock, method, ms);
			}, ms);
			if (!internal && ms > this.opts.probeAfterMs) {
				p.watch = setInterval(() => this.probe(sock), this.opts.probeAfterMs);
				p.watch.unref?.();
			}
			if (signal) {
				if (signal.aborted) return reject(new EngineError(Code.Cancelled, `pi-session: ${method} cancelled`));
				signal.addEventListener("abort", () => giveUp(new EngineError(Code.Cancelled, `pi-session: ${method} cancelled`)), { once: true });
			}
			this.pending.set(id, p);
			this.write(sock, bufs);
		});
	}

	// settle forgets a pending call; a connection being retired closes once
	// its last call is settled.
	private settle(id: number, p: Pending) {
		this.pending.delete(id);
		if (p.timer) clearTimeout(p.timer);
		if (p.watch) clearInterval(p.watch);
		const done = this.retiring.get(p.sock);
		if (done && ![...this.pending.values()].some((q) => q.sock === p.sock)) done();
	}

	// missed: a call on sock waited out its deadline. Unless it is a
	// connection left behind, the host is asked whether it still answers.
	private missed(sock: net.Socket, method: string, timeoutMs: number) {
		if (this.sock !== sock) return;
		this.late.push(this.noteLate(method, timeoutMs));
		this.probe(sock);
	}

	// noteLate counts a call that waited out its deadline and holds its
	// engine's calls back (see call): slowMs at first, doubling up to a
	// minute while its calls keep waiting out their deadlines.
	private noteLate(method: string, timeoutMs: number): Late {
		const l = { method, timeoutMs, at: Date.now() };
		this.stats.waited++;
		this.stats.last = l;
		const engine = engineOf(method);
		if (engine) {
			const prev = this.slow.get(engine);
			const backoff = prev ? Math.min(prev.backoff * 2, MAX_SLOW_MS) : this.opts.slowMs;
			this.slow.set(engine, { until: l.at + backoff, backoff, trial: false });
		}
		return l;
	}

	// probe pings the host once (a no-op while a ping is in flight). An
	// answer means the host works and an engine is slow (onLate); none
	// within probeMs, plus the time the bytes already queued on the socket
	// take to leave at 64 MB/s, means the host is stuck.
	private probe(sock: net.Socket) {
		if (this.probing || this.sock !== sock || this.state !== "connected") return;
		const limit = this.opts.probeMs + Math.ceil(sock.writableLength / 64_000);
		let settled!: () => void;
		const verdict = new Promise<void>((r) => (settled = r));
		const probing = { sock, verdict, slow: false };
		this.probing = probing;
		const end = () => {
			if (this.probing === probing) this.probing = undefined;
			settled();
		};
		this.send(sock, "ping", undefined, limit, undefined, undefined, true).then(
			() => {
				end();
				const late = this.late.splice(0);
				if (late.length > 0 && this.sock === sock) this.opts.onLate?.(late[0], late.length);
			},
			(e: EngineError) => {
				end();
				if (e.code === Code.Deadline && e.local && this.sock === sock) this.stuck(sock, limit);
			},
		);
	}

	// stuck leaves a host that stopped answering: its calls fail at once,
	// the finder is told (it ends a host this process started, or keeps the
	// wrapper's out of the way), and the client reconnects at once, to a
	// fresh host. Late answers cannot reach anyone: the socket is gone.
	private stuck(sock: net.Socket, limit: number) {
		const late = this.late.splice(0);
		const first = late[0];
		const who = this.info ? `${this.info.host}, pid ${this.info.pid}` : (this.socket ?? "?");
		const what = first ? `${first.method} got no answer within ${human(first.timeoutMs)}, nor a ping within ${human(limit)}` : `a ping got no answer within ${human(limit)}`;
		const err = new StuckError(`the engine host (${who}) stopped answering: ${what}`, this.info, this.socket);
		this.stats.stuck++;
		this.sock = undefined;
		this.probing = undefined;
		if (this.betterTimer) clearTimeout(this.betterTimer);
		this.failSock(sock, new EngineError(Code.Unavailable, `pi-session: ${err.message}`));
		sock.destroy();
		if (this.socket) this.opts.hosts?.stuck?.(this.socket, this.info);
		this.delay = 0; // the next host is another one: no reason to wait
		this.down(err);
	}

	// scheduleBetter tries, now and then, a host the finder prefers to the
	// one in use (the wrapper's, once it answers again).
	private scheduleBetter() {
		if (this.betterTimer) clearTimeout(this.betterTimer);
		this.betterTimer = undefined;
		const want = this.socket ? this.opts.hosts?.better?.(this.socket) : undefined;
		if (!want || this.state === "closed") {
			this.betterDelay = this.opts.betterMs;
			return;
		}
		this.betterTimer = setTimeout(() => void this.tryBetter(want), this.betterDelay);
		this.betterTimer.unref?.();
		this.betterDelay = Math.min(this.betterDelay * 2, MAX_BETTER_MS);
	}

	private async tryBetter(path: string) {
		this.betterTimer = undefined;
		if (this.state !== "connected" || this.socket === path) return;
		let c: Conn;
		try {
			c = await this.open(path);
		} catch {
			this.scheduleBetter();
			return;
		}
		if (this.state !== "connected" || !this.sock || this.socket === path) {
			c.sock.destroy();
			return;
		}
		const old = this.sock;
		const oldPath = this.socket;
		this.betterDelay = this.opts.betterMs;
		this.probing = undefined;
		this.late = [];
		this.use(c);
		this.retire(old, oldPath);
		this.setState("connected", undefined, true); // the host changed
	}

	// retire closes a connection left for a better host once the calls in
	// flight on it are settled, without bye: the session goes on elsewhere.
	private retire(sock: net.Socket, path: string | undefined) {
		let once = false;
		const done = () => {
			if (once) return;
			once = true;
			this.retiring.delete(sock);
			sock.destroy();
			if (path) this.opts.hosts?.retired?.(path);
		};
		this.retiring.set(sock, done);
		if (![...this.pending.values()].some((p) => p.sock === sock)) done();
	}

	private write(sock: net.Socket, bufs: Buffer[]) {
		if (bufs.length === 1) {
			sock.write(bufs[0]);
			return;
		}
		sock.cork();
		for (const b of bufs) sock.write(b);
		sock.uncork();
	}

	private failSock(sock: net.Socket, e: Error) {
		for (const [id, p] of this.pending) {
			if (p.sock !== sock) continue;
			this.settle(id, p);
			p.reject(e);
		}
	}

	private failAll(e: Error) {
		for (const [id, p] of this.pending) {
			this.settle(id, p);
			p.reject(e);
		}
	}

	private down(err: Error) {
		this.lastError = err;
		if (this.state === "closed") return;
		this.setState("down", err);
		const wait = this.delay;
		this.delay = Math.min(Math.max(this.delay * 2, this.opts.backoffMs), this.opts.maxBackoffMs);
		this.retry = setTimeout(() => this.connectNow(), wait);
		this.retry.unref?.();
	}

	private setState(s: State, err?: Error, force = false) {
		if (this.state === s && !err && !force) return;
		this.state = s;
		this.opts.onState?.(s, err);
	}
}

type Conn = { sock: net.Socket; info: HelloResult; path: string };

// Notices decides what the user is told about the engine: one notice per
// outage (unreachable or stuck, until connected again, to any host) and at
// most one about late answers per quietMs while the host answers, an
// outage's notice counting as one (a fresh host is slow at first). The
// texts say what pi does meanwhile.
export class Notices {
	private outage = false;
	private lateAt = -Infinity;
	private quietMs: number;
	private now: () => number;

	constructor(quietMs = 5 * 60_000, now: () => number = Date.now) {
		this.quietMs = quietMs;
		this.now = now;
	}

	// state returns the notice for a state change, if any.
	state(s: State, err?: Error): string | undefined {
		if (s === "connected") {
			this.outage = false;
			return undefined;
		}
		if (s !== "down" || this.outage) return undefined;
		this.outage = true;
		this.lateAt = this.now(); // the episode is told: slow answers right after it are part of it
		if (err instanceof StuckError) return `pi-session: ${err.message}; pi continues without it, and the extension moves to a fresh engine host`;
		return `pi-session: engine unreachable (${err?.message ?? "unknown error"}); pi continues without it and reconnects by itself`;
	}

	// late returns the notice for calls that waited out their deadlines
	// while the host answered, if one is due.
	late(first: Late, count: number): string | undefined {
		if (this.outage) return undefined;
		const t = this.now();
		if (t - this.lateAt < this.quietMs) return undefined;
		this.lateAt = t;
		const more = count > 1 ? ` (and ${count - 1} more call${count > 2 ? "s" : ""})` : "";
		return `pi-session: ${first.method} did not answer within ${human(first.timeoutMs)}${more}; pi went on without its answer. The engine host still answers, so an engine is slow: pi goes on without that engine for a few seconds at a time until it answers in time again. Said at most once every ${human(this.quietMs)}; /pi-session counts such calls`;
	}
}

// human writes a duration of milliseconds as "250 ms", "2 s", "1.5 s" or "5 min".
export function human(ms: number): string {
	if (ms < 1000) return `${Math.round(ms)} ms`;
	if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
	return `${Math.round(ms / 6000) / 10} min`;
}

function sleep(ms: number): Promise<void> {
	return new Promise((r) => setTimeout(r, ms).unref?.());
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
	return new Promise<T>((resolve, reject) => {
		const t = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
		p.then(
			(v) => (clearTimeout(t), resolve(v)),
			(e) => (clearTimeout(t), reject(e)),
		);
	});
}
