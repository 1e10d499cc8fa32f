// Run by extension_test.go against the real Go engine host: the TypeScript
// client and the Go host must agree on every part of the protocol.
import { Client, Code, EngineError } from "../pi-session/client.ts";

const sock = process.env.HOST_SOCKET!;
const fail = (msg: string) => {
	console.error("FAIL " + msg);
	process.exitCode = 1;
};
const c = new Client({
	connect: async () => sock,
	hello: () => ({ client: "extension", extension: "check", pi: "0", pid: process.pid, sessionId: "", sessionFile: "", sessionName: "", cwd: process.cwd(), role: "main", mode: "print", subagent: false, headless: true }),
});
c.start();
if (!(await c.ready())) fail("not connected: " + c.lastError?.message);
if (c.info?.host !== "serve") fail("hello result: " + JSON.stringify(c.info));
const bulk = Buffer.alloc(3 << 20, "ab\n\x00");
const echo = await c.call<{ n: number }>("test.echo", { n: 7 }, { bulk });
if (echo.result.n !== 7 || !echo.bulk?.equals(bulk)) fail("echo with 3 MiB bulk did not round-trip");
const codes: [string, number][] = [["test.fail", Code.Engine], ["test.panic", Code.Internal], ["test.none", Code.MethodNotFound]];
for (const [m, want] of codes) {
	try {
		await c.call(m);
		fail(m + " succeeded");
	} catch (e) {
		if ((e as EngineError).code !== want) fail(`${m}: ${(e as EngineError).code} ${(e as Error).message}, want ${want}`);
	}
}
const parallel = await Promise.all([1, 2, 3, 4].map((n) => c.call<{ n: number }>("test.echo", { n })));
if (parallel.map((a) => a.result.n).join() !== "1,2,3,4") fail("parallel answers mixed up");
// Last: an engine that lets a call wait out its deadline is held back.
try {
	await c.call("test.block", undefined, { timeoutMs: 50 });
	fail("test.block answered");
} catch (e) {
	if ((e as EngineError).code !== Code.Deadline) fail("test.block: " + (e as Error).message);
}
await c.close();
console.log("ok");
