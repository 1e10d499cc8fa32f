import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";
import { abandonServe, ensureServe, HostFinder, stopServe } from "./serve.ts";

const dirs: string[] = [];
after(() => {
	stopServe();
	dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
});

test("the finder: the wrapper's host unless it stopped answering, then a serve until it answers again", async () => {
	let started = 0;
	let fail = false;
	const f = new HostFinder("/run/wrapper.sock", async () => {
		started++;
		if (fail) throw new Error("pi-session serve: not found");
		return "/run/serve.sock";
	});
	assert.equal(await f.find(), "/run/wrapper.sock");
	assert.equal(f.better("/run/wrapper.sock"), undefined);
	f.stuck("/run/wrapper.sock");
	assert.equal(await f.find(), "/run/serve.sock", "a serve stands in");
	assert.equal(f.better("/run/serve.sock"), "/run/wrapper.sock", "the wrapper's is tried again now and then");
	f.found("/run/wrapper.sock");
	assert.equal(await f.find(), "/run/wrapper.sock", "back once it said hello");
	f.stuck("/run/wrapper.sock");
	fail = true;
	await assert.rejects(f.find(), /not found/);
	assert.equal(await f.find(), "/run/wrapper.sock", "with no stand-in the wrapper's is tried again");
	assert.equal(started, 2);
	const plain = new HostFinder(undefined, async () => "/run/serve.sock");
	assert.equal(await plain.find(), "/run/serve.sock");
	assert.equal(plain.better("/run/serve.sock"), undefined);
});

// A stand-in for pi-session serve: listens on a socket, prints it, runs on.
function fakeServe(): { bin: string; sock: string } {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pis-"));
	dirs.push(dir);
	const sock = path.join(dir, "serve.sock");
	const script = path.join(dir, "serve.mjs");
	fs.writeFileSync(script, `import * as net from "node:net";\nnet.createServer(() => {}).listen(${JSON.stringify(sock)}, () => console.log(JSON.stringify({ socket: ${JSON.stringify(sock)} })));\nprocess.on("SIGTERM", () => {});\n`);
	const bin = path.join(dir, "pi-session");
	fs.writeFileSync(bin, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)} "$@"\n`, { mode: 0o755 });
	return { bin, sock };
}

function alive(pid: number): boolean {
	try {
		const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
		return !/\) [ZX] /.test(stat);
	} catch {
		return false;
	}
}

test("a stuck serve this process started is ended (SIGKILL when stopped), its socket removed, and a fresh one started", async () => {
	const { bin, sock } = fakeServe();
	assert.equal(await ensureServe(bin), sock);
	const g = globalThis as any;
	const child = g[Symbol.for("pi-session.serve")].child;
	process.kill(child.pid, "SIGSTOP"); // it ignores SIGTERM too, as a stopped host would
	assert.equal(abandonServe("/elsewhere.sock"), false, "another host is not this process's to end");
	assert.equal(abandonServe(sock, 50), true);
	for (let i = 0; i < 300 && (alive(child.pid) || fs.existsSync(sock)); i++) await new Promise((r) => setTimeout(r, 10));
	assert.ok(!alive(child.pid), "the stuck host is gone");
	assert.ok(!fs.existsSync(sock), "its socket file is removed");
	assert.equal(await ensureServe(bin), sock, "a fresh one starts");
	const fresh = g[Symbol.for("pi-session.serve")].child;
	assert.notEqual(fresh.pid, child.pid);
	stopServe();
	process.kill(fresh.pid, "SIGKILL"); // it ignores SIGTERM
});
