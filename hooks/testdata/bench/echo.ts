// A bare Node unix-socket echo server: the baseline of the round-trip
// benchmark. Prints "ready" once listening on argv[2].
import * as net from "node:net";

const server = net.createServer((c) => {
	c.setNoDelay(true);
	c.on("data", (d) => c.write(d));
});
server.listen(process.argv[2], () => console.log("ready"));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
