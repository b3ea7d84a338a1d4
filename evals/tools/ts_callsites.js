// Definitions, call sites by name and base classes of a JS/TS tree, read with the TypeScript
// compiler API (never with TriBridRAG's extractor): the ground truth of the unseen JS/TS set.
//
//     node ts_callsites.js ROOT > definitions.json     (NODE_PATH must reach the `typescript` package)
//
// A definition is a top-level function declaration, a top-level `const f = (...) => ...` or
// `function` expression, a top-level class, and a class's methods, accessors, constructor
// (named "<init>") and arrow-function fields. Overload signatures are not definitions (the
// implementation is); abstract methods are, with no calls. A definition's calls are the names of
// every call site in it, nested functions and callbacks included: `f()`, `x.f()`, `x?.f()`,
// `new X()` and decorators (`@d`, `@d()`). A class's bases are the names in its `extends` clause.
// Lines are 1-based, from the first token (JSDoc excluded, `export` and decorators included) to
// the last. A qualname is path:Class.name:line (the line keeps an accessor pair apart).
"use strict";

const fs = require("fs");
const path = require("path");
const ts = require("typescript");

const EXTENSIONS = [".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"];

function sourceFiles(root) {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== "node_modules") walk(full);
      else if (entry.isFile() && EXTENSIONS.some((e) => entry.name.endsWith(e)) && !entry.name.endsWith(".d.ts"))
        found.push(full);
    }
  };
  walk(root);
  return found;
}

function calleeName(expr) {
  if (ts.isIdentifier(expr) || ts.isPrivateIdentifier(expr)) return expr.text;
  if (ts.isPropertyAccessExpression(expr)) return expr.name.text;
  if (ts.isParenthesizedExpression(expr)) return calleeName(expr.expression);
  if (ts.isNonNullExpression(expr)) return calleeName(expr.expression);
  if (ts.isExpressionWithTypeArguments(expr)) return calleeName(expr.expression);
  return null;
}

function calledNames(node) {
  const names = new Set();
  const visit = (n) => {
    if (ts.isCallExpression(n) || ts.isNewExpression(n)) {
      const name = calleeName(n.expression);
      if (name !== null) names.add(name);
    } else if (ts.isDecorator(n)) {
      const name = calleeName(ts.isCallExpression(n.expression) ? n.expression.expression : n.expression);
      if (name !== null) names.add(name);
    }
    ts.forEachChild(n, visit);
  };
  visit(node);
  return [...names].sort();
}

function isAbstract(member) {
  return (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Abstract) !== 0;
}

function isFunctionValue(expr) {
  return expr !== undefined && (ts.isArrowFunction(expr) || ts.isFunctionExpression(expr));
}

function definitions(root) {
  const defs = [];
  for (const file of sourceFiles(root)) {
    const rel = path.relative(root, file).split(path.sep).join("/");
    const text = fs.readFileSync(file, "utf8");
    const kind = file.endsWith(".tsx") || file.endsWith(".jsx") ? ts.ScriptKind.TSX : ts.ScriptKind.Unknown;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
    const line = (pos) => source.getLineAndCharacterOfPosition(pos).line + 1;
    const add = (qualname, name, defKind, node, callsOf, bases) => {
      const start = line(node.getStart(source));
      defs.push({
        qualname: `${rel}:${qualname}:${start}`,
        name,
        kind: defKind,
        path: rel,
        start,
        end: line(node.getEnd()),
        calls: callsOf === null ? [] : calledNames(callsOf),
        bases,
      });
    };
    for (const stmt of source.statements) {
      if (ts.isFunctionDeclaration(stmt) && stmt.name && stmt.body) {
        add(stmt.name.text, stmt.name.text, "function", stmt, stmt, []);
      } else if (ts.isVariableStatement(stmt)) {
        for (const decl of stmt.declarationList.declarations) {
          if (ts.isIdentifier(decl.name) && isFunctionValue(decl.initializer)) {
            // one declarator per statement is the rule; the span is the statement's
            const node = stmt.declarationList.declarations.length === 1 ? stmt : decl;
            add(decl.name.text, decl.name.text, "function", node, decl.initializer, []);
          }
        }
      } else if (ts.isClassDeclaration(stmt) && stmt.name) {
        const cls = stmt.name.text;
        const bases = [];
        for (const clause of stmt.heritageClauses || []) {
          if (clause.token !== ts.SyntaxKind.ExtendsKeyword) continue;
          for (const type of clause.types) {
            const name = calleeName(type.expression);
            if (name !== null) bases.push(name);
          }
        }
        add(cls, cls, "class", stmt, null, bases.sort());
        for (const member of stmt.members) {
          if (ts.isConstructorDeclaration(member) && member.body) {
            add(`${cls}.<init>`, "<init>", "function", member, member, []);
          } else if (
            (ts.isMethodDeclaration(member) || ts.isGetAccessorDeclaration(member) || ts.isSetAccessorDeclaration(member)) &&
            (member.body || isAbstract(member)) &&
            member.name &&
            (ts.isIdentifier(member.name) || ts.isPrivateIdentifier(member.name))
          ) {
            add(`${cls}.${member.name.text}`, member.name.text, "function", member, member, []);
          } else if (
            ts.isPropertyDeclaration(member) &&
            member.name &&
            ts.isIdentifier(member.name) &&
            isFunctionValue(member.initializer)
          ) {
            add(`${cls}.${member.name.text}`, member.name.text, "function", member, member.initializer, []);
          }
        }
      }
    }
  }
  return defs;
}

if (require.main === module) {
  if (process.argv.length !== 3) {
    process.stderr.write("usage: node ts_callsites.js ROOT\n");
    process.exit(2);
  }
  process.stdout.write(JSON.stringify(definitions(path.resolve(process.argv[2]))) + "\n");
}
