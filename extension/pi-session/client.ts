// The one socket client between pi and pi-session's engine host: it
// connects, says hello, reconnects with backoff, and puts a deadline on
// every call. It fails fast while the engine is unreachable so that hook
// handlers can fall back to pi's own behaviour at once. Node built-ins
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
	Unavailable: -1, // the client is not connected (nothing was sent)
} as const;

export class EngineError extends Error {
	code: number;
	data?: unknown;
	constructor(code: number, message: string, data?: unknown) {
		super(message);
		this.name = "EngineError";
		this.code = code;
		this.data = data;
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

export type Options = {
	// connect resolves the socket path, starting an engine if need be.
	connect: () => Promise<string>;
	hello: () => Hello;
	timeoutMs?: number; // a call's deadline unless it names one; default 5000
	connectTimeoutMs?: number; // connect plus hello; default 5000
	backoffMs?: number; // first retry delay; doubles up to maxBackoffMs; default 100
	maxBackoffMs?: number; // default 5000
	onState?: (state: State, error?: Error) => void;
};

export type CallOptions = { timeoutMs?: number; bulk?: Uint8Array; signal?: AbortSignal };
export type Answer<T> = { result: T; bulk?: Buffer };

type Pending = { resolve: (f: Frame) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout };

export class Client {
	state: State = "idle";
	info: HelloResult | undefined;
	connectedAt = 0;
	lastError: Error | undefined;

	private opts: Required<Omit<Options, "onState">> & Pick<Options, "onState">;
	private sock: net.Socket | undefined;
	private nextId = 1;
	private pending = new Map<number, Pending>();
	private attempt: Promise<void> | undefined;
	private retry: NodeJS.Timeout | undefined;
	private delay: number;

	constructor(opts: Options) {
		this.opts = { timeoutMs: 5000, connectTimeoutMs: 5000, backoffMs: 100, maxBackoffMs: 5000, ...opts };
		this.delay = this.opts.backoffMs;
	}

	// start begins connecting in the background; the client keeps itself
	// connected from then on until close.
	start(): void {
		if (this.state === "idle" || this.state === "down") this.connectNow();
	}

	// call sends a request and resolves with the host's answer. It rejects
	// at once with Code.Unavailable when the engine is down, after the
	// deadline with Code.Deadline, and with the host's code on an error.
	async call<T = unknown>(method: string, params?: unknown, o: CallOptions = {}): Promise<Answer<T>> {
		const timeoutMs = o.timeoutMs ?? this.opts.timeoutMs;
		const started = Date.now();
		await this.ready(timeoutMs);
		if (this.state !== "connected" || !this.sock) {
			throw new EngineError(Code.Unavailable, `pi-session engine unavailable${this.lastError ? ": " + this.lastError.message : ""}`);
		}
		const left = Math.max(1, timeoutMs - (Date.now() - started));
		const f = await this.send(this.sock, method, params, left, o.bulk, o.signal);
		return { result: f.msg.result as T, bulk: f.bulk };
	}

	// ready waits up to timeoutMs for a connection attempt in progress and
	// says whether the client is connected.
	async ready(timeoutMs = this.opts.timeoutMs): Promise<boolean> {
		if (this.state === "connecting" && this.attempt) {
			await Promise.race([this.attempt, sleep(timeoutMs)]);
		}
		return this.state === "connected";
	}

	// notify sends a message that gets no answer; false when not connected.
	notify(method: string, params?: unknown): boolean {
		if (this.state !== "connected" || !this.sock) return false;
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
		this.sock?.destroy();
		this.failAll(new EngineError(Code.Unavailable, "pi-session engine connection closed"));
	}

	private connectNow() {
		if (this.retry) clearTimeout(this.retry);
		this.retry = undefined;
		this.setState("connecting");
		const attempt = this.open().then(
			() => {
				if (this.state === "closed") {
					this.sock?.destroy(); // closed while saying hello
					return;
				}
				this.delay = this.opts.backoffMs;
				this.lastError = undefined;
				this.connectedAt = Date.now();
				this.setState("connected");
			},
			(err: Error) => this.down(err),
		);
		this.attempt = attempt;
	}

	// open connects and says hello; it rejects on any failure.
	private async open(): Promise<void> {
		const deadline = Date.now() + this.opts.connectTimeoutMs;
		const path = await withTimeout(this.opts.connect(), this.opts.connectTimeoutMs, "starting the engine");
		const sock = await new Promise<net.Socket>((resolve, reject) => {
			const s = net.createConnection({ path });
			const timer = setTimeout(() => (s.destroy(), reject(new Error(`connect ${path}: timed out`))), Math.max(1, deadline - Date.now()));
			s.once("connect", () => (clearTimeout(timer), resolve(s)));
			s.once("error", (e) => (clearTimeout(timer), reject(new Error(`connect ${path}: ${e.message}`))));
		});
		if (this.state === "closed") {
			sock.destroy();
			throw new Error("closed");
		}
		this.attach(sock);
		const hello = { ...this.opts.hello(), protocol: PROTOCOL };
		let f: Frame;
		try {
			f = await this.send(sock, "hello", hello, Math.max(1, deadline - Date.now()));
		} catch (e) {
			sock.destroy();
			throw e;
		}
		const info = f.msg.result as HelloResult;
		if (info?.protocol !== PROTOCOL) {
			sock.destroy();
			throw new EngineError(Code.Version, `pi-session protocol mismatch: the engine host speaks ${info?.protocol}, this extension ${PROTOCOL}; use the extension bundled with your pi-session (pi-session setup)`);
		}
		this.info = info;
	}

	private attach(sock: net.Socket) {
		this.sock = sock;
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
			if (this.sock !== sock) return;
			this.sock = undefined;
			this.failAll(new EngineError(Code.Unavailable, "pi-session engine connection lost"));
			if (this.state === "connected") this.down(new Error("connection lost"));
		});
	}

	private deliver(f: Frame) {
		const id = f.msg.id;
		if (typeof id !== "number") return; // refusals (id null) end with "close"
		const p = this.pending.get(id);
		if (!p) return; // answered after its deadline
		this.pending.delete(id);
		if (p.timer) clearTimeout(p.timer);
		if (f.msg.error) p.reject(new EngineError(f.msg.error.code, f.msg.error.message, f.msg.error.data));
		else p.resolve(f);
	}

	private send(sock: net.Socket, method: string, params: unknown, timeoutMs: number, bulk?: Uint8Array, signal?: AbortSignal): Promise<Frame> {
		const id = this.nextId++;
		const bufs = encode({ id, method, params, timeoutMs: Math.ceil(timeoutMs) }, bulk);
		const limits = this.info?.limits;
		if (limits && method !== "hello") {
			if (bufs[0].length - 1 > limits.maxMessage)
				return Promise.reject(new EngineError(Code.TooLarge, `pi-session: message of ${bufs[0].length - 1} bytes exceeds the limit of ${limits.maxMessage} bytes (maxMessage)`));
			if (bulk && bulk.length > limits.maxBulk)
				return Promise.reject(new EngineError(Code.TooLarge, `pi-session: bulk of ${bulk.length} bytes exceeds the limit of ${limits.maxBulk} bytes (maxBulk)`));
		}
		return new Promise<Frame>((resolve, reject) => {
			const giveUp = (e: EngineError) => {
				if (!this.pending.delete(id)) return;
				if (this.sock === sock) this.write(sock, encode({ method: "rpc.cancel", params: { id } }));
				reject(e);
			};
			const p: Pending = { resolve, reject };
			p.timer = setTimeout(() => giveUp(new EngineError(Code.Deadline, `pi-session: ${method} did not answer within ${timeoutMs} ms`)), timeoutMs);
			if (signal) {
				if (signal.aborted) return reject(new EngineError(Code.Cancelled, `pi-session: ${method} cancelled`));
				signal.addEventListener("abort", () => giveUp(new EngineError(Code.Cancelled, `pi-session: ${method} cancelled`)), { once: true });
			}
			this.pending.set(id, p);
			this.write(sock, bufs);
		});
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

	private failAll(e: Error) {
		for (const [id, p] of this.pending) {
			if (p.timer) clearTimeout(p.timer);
			this.pending.delete(id);
			p.reject(e);
		}
	}

	private down(err: Error) {
		this.lastError = err;
		if (this.state === "closed") return;
		this.setState("down", err);
		const wait = this.delay;
		this.delay = Math.min(this.delay * 2, this.opts.maxBackoffMs);
		this.retry = setTimeout(() => this.connectNow(), wait);
		this.retry.unref?.();
	}

	private setState(s: State, err?: Error) {
		if (this.state === s && !err) return;
		this.state = s;
		this.opts.onState?.(s, err);
	}
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
