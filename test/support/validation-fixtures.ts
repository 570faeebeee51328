/** Valid example objects for the validation tests, built fresh on each call so tests can mutate them. */
import type { Agent } from "../../generated/crds/agent.js";
import type { AgentDefinition } from "../../generated/crds/agentdefinition.js";
import type { Station } from "../../generated/crds/station.js";

const apiVersion = "agents.re-cinq.com/v1beta1" as const;

export function minimalAgent(): Agent {
  return {
    apiVersion,
    kind: "Agent",
    metadata: { name: "run-1", namespace: "ai-agents" },
    spec: { stationRef: "writer-station" },
  };
}

export function fullAgent(): Agent {
  return {
    apiVersion,
    kind: "Agent",
    metadata: {
      name: "run-42",
      namespace: "ai-agents",
      uid: "0b7c2d9e-1111-2222-3333-444455556666",
      resourceVersion: "12",
      creationTimestamp: "2026-11-30T10:00:00Z",
      finalizers: ["agents.re-cinq.com/batch-cleanup"],
      labels: { "app.kubernetes.io/name": "writer" },
    },
    spec: {
      stationRef: "writer-station",
      parameters: { ticket: "The login page is blank", audience: "on-call" },
      taskId: "TASK-42",
      model: "gemini-3.1-flash-lite",
      targetRepo: "re-cinq/ai-agent-subsystem",
      branch: "agent/run-42",
      files: [
        {
          path: "notes/brief.md",
          url: "https://files.example.com/runs/42/brief.md",
          headers_secret: "files-auth",
        },
        { path: "/workspace/data.csv", url: "http://files.example.com/data.csv" },
      ],
      resumeSession: "3f1c0a2e",
    },
    status: {
      phase: "Succeeded",
      jobName: "run-42",
      startedAt: "2026-11-30T10:00:01Z",
      completedAt: "2026-11-30T10:05:00Z",
      exitCode: 0,
      output: '{"type":"result"}',
      failureReason: "",
      prUrl: "https://github.com/re-cinq/ai-agent-subsystem/pull/7",
      sessionId: "3f1c0a2e",
      batchId: "msgbatch_01",
      batchProvider: "anthropic",
      batchFallback: false,
      batchCleanupAttempts: 0,
    },
  };
}

export function minimalStation(): Station {
  return {
    apiVersion,
    kind: "Station",
    metadata: { name: "writer-station" },
    spec: {
      agentDefRef: "writer",
      template: { spec: { containers: [{ name: "agent", image: "ubuntu:24.04" }] } },
    },
  };
}

export function fullStation(): Station {
  return {
    apiVersion,
    kind: "Station",
    metadata: { name: "writer-station", namespace: "ai-agents" },
    spec: {
      agentDefRef: "writer",
      template: {
        metadata: { labels: { team: "docs" } },
        spec: {
          serviceAccountName: "runner",
          containers: [{ name: "agent", image: "ubuntu:24.04", resources: { limits: { cpu: "2" } } }],
        },
      },
      deadlineMinutes: 45,
      maxConcurrentRuns: 2,
      concurrencyPolicy: "Replace",
      successfulRunsHistoryLimit: 0,
      failedRunsHistoryLimit: 10,
      egress: {
        allowHosts: ["pypi.org", "*.pythonhosted.org", "registry.example.com:8443", "[2001:db8::1]:22"],
      },
    },
  };
}

export function minimalDefinition(): AgentDefinition {
  return {
    apiVersion,
    kind: "AgentDefinition",
    metadata: { name: "writer" },
    spec: { prompt: "Write {topic}" },
  };
}

export function fullDefinition(): AgentDefinition {
  return {
    apiVersion,
    kind: "AgentDefinition",
    metadata: { name: "writer", namespace: "ai-agents" },
    spec: {
      description: "Writes docs",
      prompt: "Write about {topic}",
      model: "claude-sonnet-4-6",
      execution: "interactive",
      allowed_tools: ["Bash(npm run test:*)", "Edit"],
      disallowed_tools: ["Bash(rm *)"],
      permission_mode: "bypass",
      max_turns: 20,
      tool_config: { command: ["python3", "run.py"], anything: { nested: true } },
      resources: {
        env: [{ name: "LOG_LEVEL", value: "debug" }],
        secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }],
        mcp_servers: [
          { name: "local", transport: "stdio", command: "mcp-server", args: ["--port", "0"] },
          {
            name: "lore",
            transport: "http",
            url: "https://lore.example.com/mcp",
            headers_secret: "lore-mcp-auth",
          },
          { name: "events", transport: "sse", url: "https://events.example.com/sse" },
        ],
        repos: [{ name: "site", url: "re-cinq/site", ref: "main", path: "site", token_secret: "gh-token" }],
        skills: ["docs-style"],
        skills_source: "https://skills.example.com",
        conversation: {
          source: "https://conv.example.com",
          id: "prev",
          pin: "next",
          headers_secret: "conv-auth",
        },
      },
      output: {
        format: "stream-json",
        schema: { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] },
        select: [
          { event: "tool_call", tool: "Bash" },
          { event: "message", role: "assistant", contains: "done" },
        ],
        sinks: [
          { type: "stdout" },
          { type: "http", url: "https://hooks.example.com/run", headers_secret: "hook-auth" },
          { type: "file", path: "events.jsonl" },
        ],
        watch: [{ event: "report", path: "report.md" }],
      },
      delivery: {
        pullRequest: {
          tokenSecret: "gh-token",
          repo: "site",
          base: "main",
          title: "Docs: {topic}",
          body: "Automated",
          draft: true,
        },
      },
    },
  };
}

/** The batch example of the specification's batch-run rules (docs/batch-runs.md), with output.schema. */
export function batchDefinition(): AgentDefinition {
  return {
    apiVersion,
    kind: "AgentDefinition",
    metadata: { name: "ticket-summary", namespace: "ai-agents" },
    spec: {
      description: "Summarise a support ticket in three sentences.",
      model: "claude-sonnet-4-6",
      execution: "batch",
      batch: { timeoutMinutes: 720, onTimeout: "fail", maxTokens: 16000 },
      prompt: "Summarise this support ticket in three sentences for the on-call engineer:\n{ticket}\n",
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
      output: {
        schema: {
          type: "object",
          properties: { severity: { type: "string", enum: ["low", "medium", "high"] } },
          required: ["severity"],
          additionalProperties: false,
        },
      },
    },
  };
}
