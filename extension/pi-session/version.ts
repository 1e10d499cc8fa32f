// The extension's version; extension/embed_test.go checks it against package.json.
export const VERSION = "0.1.0";
