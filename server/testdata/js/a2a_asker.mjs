// A small A2A agent on @a2a-js/sdk's server classes, for tool/a2a's
// tests: its first message asks "What is your name?" (input-required);
// the answer on the same task completes it with "Hello, NAME" as an
// artifact. It listens on 127.0.0.1 at a free port and prints
// "listening URL" on stdout; it stops when stdin closes.
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from '@a2a-js/sdk/server';
import { jsonRpcHandler, agentCardHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { TaskState, Role } from '@a2a-js/sdk';

const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const textOf = (m) => (m?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

function status(ctx, state, say) {
  const message = say === undefined ? undefined : {
    messageId: crypto.randomUUID(), contextId: ctx.contextId, taskId: ctx.taskId, role: Role.ROLE_AGENT,
    parts: [text(say)], metadata: undefined, extensions: [], referenceTaskIds: [],
  };
  return AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined });
}

const executor = {
  async execute(ctx, bus) {
    const task = ctx.task ?? { id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined }, artifacts: [], history: [ctx.userMessage], metadata: undefined };
    bus.publish(AgentEvent.task(task));
    if (!ctx.task) {
      bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, 'What is your name?'));
    } else {
      const name = textOf(ctx.userMessage);
      bus.publish(AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId: 'greeting', name: 'greeting', description: '', parts: [text('Hello, ' + name)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined }, metadata: undefined }));
    bus.finished();
  },
};

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'js asker', description: 'Asks your name, then greets you.', version: '1',
    supportedInterfaces: [{ url: url + '/rpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [], signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log('listening ' + url);
});
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
