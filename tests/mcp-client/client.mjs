// The official MCP TypeScript SDK client against `sandcell mcp`: handshake, tools/list, and
// tools/call of run_code (success, failure as isError, a PNG figure as image content), session
// files up and down.
// Usage: node client.mjs SANDCELL [ARGS BEFORE "mcp"...]   (exit 0 when every check passed)
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [sandcell, ...globalArgs] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: sandcell,
  args: [...globalArgs, "mcp"],
  env: { ...process.env },  // the SDK passes only a few variables by default
  stderr: "inherit",
});
const client = new Client({ name: "sandcell-ctest", version: "1.0.0" });
await client.connect(transport);
console.log(`connected to ${client.getServerVersion().name} ${client.getServerVersion().version}`);

const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
assert.deepEqual(names, ["download_file", "list_sessions", "list_skills", "remove_session", "run_code", "upload_file"]);
const runCode = tools.find((t) => t.name === "run_code");
assert.deepEqual(runCode.inputSchema.required, ["language", "code"]);

const ok = await client.callTool({ name: "run_code", arguments: { language: "python", code: "print(6 * 7)" } });
assert.equal(ok.isError, false, text(ok));
assert.match(text(ok), /42/);
console.log("run_code ok:", JSON.stringify(text(ok)));

const bad = await client.callTool({ name: "run_code", arguments: { language: "python", code: "raise ValueError('boom')" } });
assert.equal(bad.isError, true);
assert.match(text(bad), /ValueError/);
console.log("run_code failure is isError:", JSON.stringify(text(bad).slice(0, 200)));

const plot = await client.callTool({
  name: "run_code",
  arguments: { language: "python", code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.savefig('/workspace/out/squares.png')\n" },
});
assert.equal(plot.isError, false, text(plot));
const image = plot.content.find((c) => c.type === "image");
assert.ok(image, `no image content: ${JSON.stringify(plot.content).slice(0, 300)}`);
assert.equal(image.mimeType, "image/png");
assert.deepEqual([...Buffer.from(image.data, "base64").subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
console.log("run_code PNG artifact as image content:", Buffer.from(image.data, "base64").length, "bytes");

const session = `mcp-sdk-${process.pid}`;
const up = await client.callTool({ name: "upload_file", arguments: { session, path: "data.txt", content: "hello from the sdk" } });
assert.equal(up.isError, false, text(up));
const read = await client.callTool({
  name: "run_code",
  arguments: { language: "python", session, code: "print(open('data.txt').read().upper())" },
});
assert.match(text(read), /HELLO FROM THE SDK/, text(read));
const down = await client.callTool({ name: "download_file", arguments: { session, path: "data.txt" } });
assert.equal(text(down), "hello from the sdk");
const rm = await client.callTool({ name: "remove_session", arguments: { session } });
assert.equal(rm.isError, false, text(rm));

await client.close();
console.log("mcp sdk client: all checks passed");
