import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The dashboard's one stylesheet: readable on a laptop and a phone, no web fonts.
enum Stylesheet {
    static let text = """
        :root { --fg: #1b1f24; --muted: #5b636e; --line: #d6dae0; --bg: #f7f8fa; --accent: #0b63c5; --bad: #b42318; --good: #1a7f37; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
        header.top { display: flex; flex-wrap: wrap; gap: .75rem 1.25rem; align-items: center; padding: .6rem 1rem; background: #fff; border-bottom: 1px solid var(--line); }
        header.top .brand { font-weight: 700; color: var(--fg); text-decoration: none; }
        header.top nav { display: flex; gap: 1rem; flex-wrap: wrap; }
        header.top .signout { margin-left: auto; display: flex; gap: .5rem; align-items: center; }
        .who { color: var(--muted); }
        main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
        footer { color: var(--muted); font-size: .85rem; text-align: center; padding: 1rem; }
        h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
        h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
        a { color: var(--accent); }
        a:focus, button:focus, input:focus, select:focus, textarea:focus { outline: 3px solid #8ab4f8; outline-offset: 1px; }
        code, pre, textarea.code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
        pre { background: #fff; border: 1px solid var(--line); padding: .75rem; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
        table { width: 100%; border-collapse: collapse; background: #fff; }
        th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; word-break: break-word; }
        th { font-weight: 600; background: #eef1f4; }
        .table-wrap { overflow-x: auto; }
        form.stack { display: grid; gap: .35rem; max-width: 28rem; }
        form.inline { display: inline-flex; gap: .4rem; flex-wrap: wrap; align-items: center; margin: 0; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: .5rem 1rem; align-items: end; }
        .grid label { display: grid; gap: .2rem; min-width: 0; }
        .grid input, .grid select { width: 100%; min-width: 0; }
        input, select, textarea, button { font: inherit; padding: .4rem .5rem; border: 1px solid #b9c0c8; border-radius: 4px; background: #fff; color: var(--fg); }
        textarea { width: 100%; min-height: 12rem; }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.secondary { background: #fff; color: var(--accent); }
        button.danger { background: var(--bad); border-color: var(--bad); }
        .error { color: var(--bad); background: #fff1f0; border: 1px solid #f3c3bf; padding: .5rem .75rem; border-radius: 4px; }
        .notice { color: var(--good); background: #effaf1; border: 1px solid #b7e2c1; padding: .5rem .75rem; border-radius: 4px; }
        .warn { color: #7a4d00; background: #fff8e6; border: 1px solid #f0d77a; padding: .5rem .75rem; border-radius: 4px; }
        .verdict { font-size: 1.05rem; }
        #hops th, #recent-traces th { word-break: normal; white-space: nowrap; }
        tr.later td { background: #f4f6fb; }
        tr.failed td { background: #fff1f0; }
        tr.selected td { font-weight: 600; }
        .later-mark { font-size: .85rem; color: var(--muted); }
        td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        .secret { background: #fffbe6; border: 1px solid #f0d77a; padding: .5rem .75rem; }
        .muted { color: var(--muted); }
        .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: .75rem; }
        .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .75rem; }
        .card .big { font-size: 1.6rem; font-weight: 700; }
        .tabs { display: flex; gap: 1rem; flex-wrap: wrap; margin-bottom: 1rem; }
        img.asset-preview { max-width: 16rem; max-height: 12rem; display: block; margin-top: .4rem; border: 1px solid var(--line); }
        .diff-add { color: var(--good); }
        .diff-remove { color: var(--bad); }
        @media (max-width: 40rem) {
          main { padding: .6rem; }
          th, td { padding: .3rem; font-size: .9rem; }
          header.top .signout { margin-left: 0; }
        }
        """
}
