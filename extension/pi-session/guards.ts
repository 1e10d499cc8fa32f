// The optional shared guard library: when <agentDir>/lib/guards.ts exists
// and exports isGuardOff(name), the budget asks isGuardOff("context") at
// session start, on each input and each turn, so a user's `/guards off
// context` turns enforcement off for the session (the footer says
// "effective off (context guard off)"). pi-session never writes that
// library. Node built-ins only, so its tests run outside pi.
import * as fs from "node:fs";
import { pathToFileURL } from "node:url";

export type Guards = { off: () => Promise<boolean | undefined> };

// guardIntegration loads file the first time it exists. off() is
// undefined without the library or when it fails; a failure is said once.
export function guardIntegration(file: string, say: (text: string, level?: "info" | "warning" | "error") => void): Guards {
	let mod: { isGuardOff: (name: string) => unknown } | null | undefined;
	let told = false;
	const fail = (what: string, e: unknown) => {
		if (!told) say(`pi-session budget: ${file}: ${what}: ${(e as Error)?.message ?? e}; the context guard is not consulted`, "warning");
		told = true;
	};
	const load = async () => {
		if (mod !== undefined) return mod;
		if (!fs.existsSync(file)) return null; // looked for again next time: a library may be set up later
		mod = null;
		try {
			const m = await import(pathToFileURL(file).href);
			const api = typeof m.isGuardOff === "function" ? m : m.default;
			if (typeof api?.isGuardOff !== "function") throw new Error("it does not export isGuardOff(name)");
			mod = api;
		} catch (e) {
			fail("cannot load", e);
		}
		return mod;
	};
	return {
		off: async () => {
			const m = await load();
			if (!m) return undefined;
			try {
				return (await m.isGuardOff("context")) === true;
			} catch (e) {
				fail("isGuardOff failed", e);
				return undefined;
			}
		},
	};
}
