// Wire-format check of `ppdeploy sim` with a client nobody here wrote: the official `openai` npm package.
// Usage: node openai_wire_test.mjs http://127.0.0.1:PORT   (run from a directory where `openai` is installed)
import OpenAI from 'openai';

const url = process.argv[2];
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-ppdeploy-sim', maxRetries: 0, timeout: 20000 });
const fail = (msg) => { console.error(`FAIL: ${msg}`); process.exit(1); };

// 1. Streaming chat completion with usage.
const stream = await client.chat.completions.create({
  model: 'ppdeploy-sim', messages: [{ role: 'user', content: 'Say something.' }],
  stream: true, max_tokens: 12, stream_options: { include_usage: true },
});
let text = '', usage = null, finish = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  const choice = chunk.choices[0];
  if (choice?.delta?.content) text += choice.delta.content;
  if (choice?.finish_reason) finish = choice.finish_reason;
  if (chunk.usage) usage = chunk.usage;
}
if (!text) fail('chat stream: no content');
if (!usage || usage.completion_tokens < 1) fail(`chat stream: no usage (${JSON.stringify(usage)})`);
if (finish !== 'stop' && finish !== 'length') fail(`chat stream: finish_reason ${finish}`);

// 2. Chat stream helper that accumulates the final message (validates chunk consistency).
const runner = client.beta?.chat?.completions?.stream
  ? client.beta.chat.completions.stream({ model: 'ppdeploy-sim', messages: [{ role: 'user', content: 'Again.' }], max_tokens: 8 })
  : client.chat.completions.stream({ model: 'ppdeploy-sim', messages: [{ role: 'user', content: 'Again.' }], max_tokens: 8 });
const finalChat = await runner.finalChatCompletion();
if (!finalChat.choices[0].message.content) fail('chat stream helper: empty final message');

// 3. Responses API, streaming events.
const rs = await client.responses.create({ model: 'ppdeploy-sim', input: 'Hello there.', stream: true, max_output_tokens: 64 });
let rtext = '', completed = null;
const types = [];
for await (const ev of rs) {
  types.push(ev.type);
  if (ev.type === 'response.output_text.delta') rtext += ev.delta;
  if (ev.type === 'response.completed' || ev.type === 'response.incomplete') completed = ev.response;
}
if (types[0] !== 'response.created') fail(`responses: first event ${types[0]}`);
if (!completed) fail(`responses: no response.completed (${types.join(',')})`);
if (completed.output[0].content[0].text !== rtext) fail('responses: deltas differ from the final text');

// 4. Responses stream helper (accumulates and validates the event sequence) and the non-streaming call.
const helper = client.responses.stream({ model: 'ppdeploy-sim', input: 'Once more.', max_output_tokens: 64 });
const finalResp = await helper.finalResponse();
if (!finalResp.output_text) fail('responses helper: empty output_text');
const plain = await client.responses.create({ model: 'ppdeploy-sim', input: 'Plain.' });
if (!plain.output_text) fail('responses non-streaming: empty output_text');

// 5. Models list.
const models = await client.models.list();
if (models.data[0].id !== 'ppdeploy-sim') fail('models: wrong id');

console.log(JSON.stringify({ ok: true, chunks, text, usage, rtext, events: types.length, helper: finalResp.output_text }));
