import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { guardIntegration } from "./guards.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "guards-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test("no library: the guard is not consulted, until one is set up", async () => {
	const said: string[] = [];
	const file = path.join(dir, "later.ts");
	const g = guardIntegration(file, (t) => said.push(t));
	assert.equal(await g.off(), undefined);
	assert.deepEqual(said, []);
	fs.writeFileSync(file, "export function isGuardOff(name: string) { return name === 'context'; }\n");
	assert.equal(await g.off(), true);
});

test("isGuardOff is asked for the context guard, live", async () => {
	const flag = path.join(dir, "off");
	const file = path.join(dir, "guards.ts");
	fs.writeFileSync(file, `import * as fs from "node:fs";\nexport function isGuardOff(name: string): boolean { return name === "context" && fs.existsSync(${JSON.stringify(flag)}); }\n`);
	const g = guardIntegration(file, () => {});
	assert.equal(await g.off(), false);
	fs.writeFileSync(flag, "");
	assert.equal(await g.off(), true);
	fs.rmSync(flag);
	assert.equal(await g.off(), false);
});

test("an async isGuardOff and a default export work", async () => {
	const file = path.join(dir, "default.ts");
	fs.writeFileSync(file, `export default { isGuardOff: async (name: string) => name === "context" };\n`);
	assert.equal(await guardIntegration(file, () => {}).off(), true);
});

test("a broken library is said once and never consulted", async () => {
	const said: string[] = [];
	for (const [name, body] of [
		["syntax.ts", "export function isGuardOff(: {\n"],
		["none.ts", "export const x = 1;\n"],
		["throws.ts", "export function isGuardOff() { throw new Error('no store'); }\n"],
	]) {
		said.length = 0;
		const file = path.join(dir, name);
		fs.writeFileSync(file, body);
		const g = guardIntegration(file, (t) => said.push(t));
		assert.equal(await g.off(), undefined, name);
		assert.equal(await g.off(), undefined, name);
		assert.equal(said.length, 1, `${name}: ${said.join(" / ")}`);
		assert.match(said[0], new RegExp(name));
	}
});
