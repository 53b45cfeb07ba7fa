// The debug adapter for `quickdev` sessions: every session is an attach by the time it starts (a
// launch became one in the launch resolver), and the process serves DAP on that port itself: a
// quick-dev job runs debugpy's adapter in-process, an injected debugpy.listen() its own adapter.
// Talking to it directly, as the Python Debugger extension does for "connect", needs no adapter
// process and no Python Debugger extension.
import * as vscode from "vscode";
import { log } from "../common/logger";
import { adapterAddress } from "./configuration";

export class AdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  createDebugAdapterDescriptor(session: vscode.DebugSession): vscode.ProviderResult<vscode.DebugAdapterDescriptor> {
    const address = adapterAddress(session.configuration);
    if (!address) {
      // Only a resolver that let a configuration through without an address gets here.
      throw new Error(`Quickdev: the debug configuration "${session.name}" has no address to attach to.`);
    }
    log.info(`debug adapter: the job's debugpy at ${address.host}:${address.port}`);
    return new vscode.DebugAdapterServer(address.port, address.host);
  }
}
