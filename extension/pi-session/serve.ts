// Where the extension finds its engine host. Under the wrapper it is the
// wrapper's (PI_SESSION_SOCKET); under plain pi the extension starts one
// itself: `pi-session serve --pid <pi>`, which prints its socket and exits
// when this pi exits. One such host per pi process, shared by every
// session runtime in it. A host that stops answering is left like a dead
// one: one this process started is ended and replaced, the wrapper's is
// left to the wrapper and a serve stands in until it answers again.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

// The package root: setup writes pi-session.json (the binary's path) there.
export const packageDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

// binary is the pi-session executable to start: $PI_SESSION_BIN, else the
// one `pi-session setup` recorded in <package>/pi-session.json, else
// pi-session on PATH.
export function binary(env: NodeJS.ProcessEnv = process.env, dir = packageDir): string {
	if (env.PI_SESSION_BIN) return env.PI_SESSION_BIN;
	try {
		const rec = JSON.parse(fs.readFileSync(path.join(dir, "pi-session.json"), "utf8"));
		if (typeof rec.binary === "string" && fs.existsSync(rec.binary)) return rec.binary;
	} catch {
		// no record: pi-session was not set up from a binary, try PATH
	}
	return "pi-session";
}

const SERVE = Symbol.for("pi-session.serve");
const STUCK = Symbol.for("pi-session.stuck");
type Serve = { child: ChildProcess; socket: Promise<string>; path?: string; users: Set<object> };
type Slot = { [SERVE]?: Serve; [STUCK]?: Map<string, number> };

function alive(c: ChildProcess): boolean {
	return c.exitCode === null && c.signalCode === null;
}

// ensureServe returns the socket of this process's engine host, starting
// one when there is none or it died.
export function ensureServe(bin = binary(), timeoutMs = 5000): Promise<string> {
	const g = globalThis as Slot;
	const cur = g[SERVE];
	if (cur && alive(cur.child)) return cur.socket;
	const child = spawn(bin, ["serve", "--pid", String(process.pid)], {
		detached: true, // its own process group: terminal signals are pi's, not the host's
		stdio: ["ignore", "pipe", "pipe"],
	});
	const socket = new Promise<string>((resolve, reject) => {
		let out = "";
		let errText = "";
		const fail = (why: string) => {
			clearTimeout(timer);
			child.kill("SIGTERM");
			reject(new Error(`pi-session serve (${bin}): ${why}${errText.trim() ? ": " + errText.trim().split("\n").pop() : ""}`));
		};
		const timer = setTimeout(() => fail(`no socket after ${timeoutMs} ms`), timeoutMs);
		child.stderr!.on("data", (d: Buffer) => (errText += d.toString("utf8")));
		child.stdout!.on("data", (d: Buffer) => {
			out += d.toString("utf8");
			const nl = out.indexOf("\n");
			if (nl < 0) return;
			clearTimeout(timer);
			try {
				const ready = JSON.parse(out.slice(0, nl)) as { socket?: string };
				if (!ready.socket) throw new Error("no socket in " + out.slice(0, nl));
				serve.path = ready.socket;
				resolve(ready.socket);
			} catch (e) {
				fail((e as Error).message);
				return;
			}
			// The host writes nothing more; let pi exit without waiting for it.
			child.stdout!.destroy();
			child.stderr!.destroy();
			child.unref();
		});
		child.once("error", (e) => fail(e.message));
		child.once("exit", (code, sig) => fail(`exited (${sig ?? code}) before it was ready`));
	});
	socket.catch(() => {}); // callers see the rejection; do not crash pi on it
	const serve: Serve = { child, socket, users: new Set() };
	g[SERVE] = serve;
	return socket;
}

// stopServe ends the engine host this process started, if any.
export function stopServe(): void {
	const g = globalThis as Slot;
	const cur = g[SERVE];
	delete g[SERVE];
	if (cur && alive(cur.child)) cur.child.kill("SIGTERM");
}

// abandonServe ends the engine host this process started if it listens on
// socket (it stopped answering), so that ensureServe starts a fresh one:
// SIGTERM, and SIGKILL a second later if it has not exited (a stopped
// process acts on no other signal), then its socket file is removed.
export function abandonServe(socket: string, graceMs = 1000): boolean {
	const g = globalThis as Slot;
	const cur = g[SERVE];
	if (!cur || cur.path !== socket) return false;
	delete g[SERVE];
	const child = cur.child;
	if (!alive(child)) return true;
	const kill = setTimeout(() => alive(child) && child.kill("SIGKILL"), graceMs);
	kill.unref?.();
	child.once("exit", () => {
		clearTimeout(kill);
		try {
			if (fs.lstatSync(socket).isSocket()) fs.rmSync(socket, { force: true });
		} catch {
			// gone already: it removed its own
		}
	});
	child.kill("SIGTERM");
	return true;
}

// HostFinder finds this session's engine host and keeps one that stopped
// answering out of the way (see Hosts in client.ts): the wrapper's socket
// (primary) unless it stopped answering, else a serve this process starts,
// until the wrapper answers a hello again. One finder per client.
export class HostFinder {
	private primary: string | undefined;
	private start: () => Promise<string>;

	constructor(primary: string | undefined, start: () => Promise<string> = () => ensureServe()) {
		this.primary = primary || undefined;
		this.start = start;
	}

	find = async (): Promise<string> => {
		const p = this.primary;
		if (p && !stuckMarks().has(p)) return p;
		try {
			return await this.start();
		} catch (e) {
			// No stand-in: the wrapper's host is tried again next time.
			if (p) stuckMarks().delete(p);
			throw e;
		}
	};

	stuck = (socket: string): void => {
		if (socket === this.primary) stuckMarks().set(socket, Date.now());
		else abandonServe(socket);
	};

	found = (socket: string): void => {
		if (socket === this.primary) stuckMarks().delete(socket);
		const cur = (globalThis as Slot)[SERVE];
		if (cur && cur.path === socket) cur.users.add(this);
	};

	// retired: this client went back to the wrapper's host; a serve that
	// stood in and that no other session of the process uses is ended.
	retired = (socket: string): void => {
		const cur = (globalThis as Slot)[SERVE];
		if (!cur || cur.path !== socket) return;
		cur.users.delete(this);
		if (cur.users.size === 0 && this.primary) stopServe();
	};

	better = (socket: string): string | undefined => (this.primary && socket !== this.primary ? this.primary : undefined);
}

// stuckMarks are the wrapper sockets that stopped answering, process-wide
// (every session of the process leaves them alike), with when.
function stuckMarks(): Map<string, number> {
	const g = globalThis as Slot;
	return (g[STUCK] ??= new Map());
}
