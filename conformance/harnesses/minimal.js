#!/usr/bin/env node
// A minimal conformance harness in JavaScript (protocol v1): it completes the handshake,
// accepts the configuration and answers every case `skipped`. Start here when writing a
// harness for an implementation in another language; see conformance/README.md.
"use strict";
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin, terminal: false });
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");

rl.on("line", (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  switch (message.cmd) {
    case "start":
      if (message.version !== 1) process.exit(2);
      send({
        ready: true,
        version: 1,
        implementation: {
          name: "minimal-js",
          version: "0.0.1",
          language: "javascript",
          capabilities: ["inline", "registration", "runs"],
        },
      });
      break;
    case "configure":
      send({ configured: true });
      break;
    case "run":
      // A real harness hands message.case to its implementation and answers
      // {seq, result: {...}}; this one declines every case.
      send({ seq: message.seq, skipped: "minimal.js implements nothing yet" });
      break;
    case "stop":
      process.exit(0);
  }
});
