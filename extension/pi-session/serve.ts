// Under plain pi (no pi-session wrapper, so no PI_SESSION_SOCKET), the
// extension starts the engine host itself: `pi-session serve --pid <pi>`,
// which prints its socket and exits when this pi exits. One host per pi
// process, shared by every session runtime in it.
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
type Serve = { child: ChildProcess; socket: Promise<string> };
type Slot = { [SERVE]?: Serve };

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
	g[SERVE] = { child, socket };
	return socket;
}

// stopServe ends the engine host this process started, if any.
export function stopServe(): void {
	const g = globalThis as Slot;
	const cur = g[SERVE];
	delete g[SERVE];
	if (cur && alive(cur.child)) cur.child.kill("SIGTERM");
}
