// Tool result content on the engine socket: text blocks travel as bulk
// bytes (no JSON escaping for large outputs), each replaced in the JSON by
// {"type":"text","bytes":<UTF-8 length>}; other blocks travel as they are.
// hooks/blocks.go is the Go side.

export type Block = { type: string; text?: string; bytes?: number; [k: string]: unknown };

export function packBlocks(content: readonly Block[]): { blocks: Block[]; bulk: Buffer } {
	const parts: Buffer[] = [];
	const blocks = content.map((b) => {
		if (b.type !== "text" || typeof b.text !== "string") return b;
		const buf = Buffer.from(b.text, "utf8");
		parts.push(buf);
		const { text: _text, ...rest } = b;
		return { ...rest, type: "text", bytes: buf.length };
	});
	return { blocks, bulk: Buffer.concat(parts) };
}

// unpackBlocks reverses packBlocks; it throws when the sizes do not add up.
export function unpackBlocks(blocks: readonly Block[], bulk: Buffer | undefined): Block[] {
	let pos = 0;
	const out = blocks.map((b) => {
		if (b.type !== "text" || typeof b.bytes !== "number") return b;
		const end = pos + b.bytes;
		if (!bulk || end > bulk.length) throw new Error("pi-session: text blocks larger than the bulk bytes");
		const { bytes: _bytes, ...rest } = b;
		const block = { ...rest, type: "text", text: bulk.toString("utf8", pos, end) };
		pos = end;
		return block;
	});
	if (pos !== (bulk?.length ?? 0)) throw new Error("pi-session: bulk bytes left over after the text blocks");
	return out;
}
