// A small stand-in for the `vscode` module, enough for the pure and data-layer modules under
// `node --test` (the test bundles alias `vscode` to this file). Records what was called.


export const calls: { method: string; args: unknown[] }[] = [];

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => unknown)[] = [];
  readonly fired: T[] = [];
  event = (listener: (e: T) => unknown): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(data: T): void {
    this.fired.push(data);
    for (const l of [...this.listeners]) {
      l(data);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { title: string; command: string; arguments?: unknown[] };
  constructor(
    public label: string,
    public collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}
  static from(c: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(c.scheme, c.authority ?? "", c.path ?? "", c.query ?? "", c.fragment ?? "");
  }
  /** Like VS Code: percent-encodes each component, and `parse` decodes them again. */
  toString(): string {
    const enc = (s: string, keepSlash: boolean) =>
      s
        .split("/")
        .map((p) => encodeURIComponent(p))
        .join(keepSlash ? "/" : "%2F");
    let out = `${this.scheme}:`;
    if (this.authority) {
      out += `//${enc(this.authority, false)}`;
    }
    out += enc(this.path, true);
    if (this.query) {
      out += `?${enc(this.query, false)}`;
    }
    if (this.fragment) {
      out += `#${enc(this.fragment, false)}`;
    }
    return out;
  }
  static parse(value: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) {
      throw new Error(`bad uri ${value}`);
    }
    const dec = (s: string | undefined) => decodeURIComponent(s ?? "");
    return new Uri(m[1], dec(m[2]), dec(m[3]), dec(m[4]), dec(m[5]));
  }
}

let config: Record<string, unknown> = {};

export function setConfig(values: Record<string, unknown>): void {
  config = { ...values };
}

export const workspace = {
  textDocuments: [] as { uri: Uri }[],
  workspaceFolders: undefined as undefined | { uri: { fsPath: string } }[],
  getConfiguration(section?: string) {
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const full = section ? `${section}.${key}` : key;
        return (full in config ? (config[full] as T) : fallback) as T | undefined;
      },
    };
  },
  onDidChangeConfiguration: () => new Disposable(),
  registerTextDocumentContentProvider: () => new Disposable(),
};

export const window = {
  showErrorMessage: (...args: unknown[]) => {
    calls.push({ method: "window.showErrorMessage", args });
    return Promise.resolve(undefined);
  },
  showInformationMessage: (...args: unknown[]) => {
    calls.push({ method: "window.showInformationMessage", args });
    return Promise.resolve(undefined);
  },
};

export const commands = {
  executeCommand: (...args: unknown[]) => {
    calls.push({ method: "commands.executeCommand", args });
    return Promise.resolve(undefined);
  },
  registerCommand: () => new Disposable(),
};

export const env = { clipboard: { writeText: async (_: string) => undefined } };
export const extensions = { getExtension: (_: string): undefined => undefined };
export const version = "1.90.0";
