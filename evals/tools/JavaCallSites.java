// Definitions, call sites by name and supertypes of a Java tree, read with javac's tree API
// (com.sun.source.tree, parse only: no symbol resolution, never TriBridRAG's extractor): the
// ground truth of the unseen Java set.
//
//     javac -d OUT JavaCallSites.java && java -cp OUT JavaCallSites ROOT > definitions.json
//
// A definition is a class, interface, enum or record (nested member types included) and the
// methods and constructors (named "<init>") declared in its body; abstract and interface methods
// without a body are definitions too, with no calls. A method's calls are the names of every call
// site in its body, lambdas and anonymous classes included: `f()`, `x.f()`, `new X(...)` (the
// simple name of X). A type's bases are the simple names in its `extends` and `implements`
// clauses. Lines are 1-based, from the first token (annotations and modifiers included, Javadoc
// excluded) to the closing brace.

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.ExpressionTree;
import com.sun.source.tree.IdentifierTree;
import com.sun.source.tree.MemberSelectTree;
import com.sun.source.tree.MethodInvocationTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.NewClassTree;
import com.sun.source.tree.ParameterizedTypeTree;
import com.sun.source.tree.Tree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.SourcePositions;
import com.sun.source.util.TreeScanner;
import com.sun.source.util.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

public final class JavaCallSites {
    private JavaCallSites() {}

    /** The simple name an expression names: `X`, `a.b.X`, `X<T>`; null for anything else. */
    static String simpleName(Tree tree) {
        if (tree instanceof IdentifierTree id) {
            return id.getName().toString();
        }
        if (tree instanceof MemberSelectTree select) {
            return select.getIdentifier().toString();
        }
        if (tree instanceof ParameterizedTypeTree type) {
            return simpleName(type.getType());
        }
        return null;
    }

    static TreeSet<String> calledNames(Tree body) {
        TreeSet<String> names = new TreeSet<>();
        if (body == null) {
            return names;
        }
        new TreeScanner<Void, Void>() {
            @Override
            public Void visitMethodInvocation(MethodInvocationTree call, Void unused) {
                String name = simpleName(call.getMethodSelect());
                if (name != null) {
                    names.add(name);
                }
                return super.visitMethodInvocation(call, unused);
            }

            @Override
            public Void visitNewClass(NewClassTree created, Void unused) {
                String name = simpleName(created.getIdentifier());
                if (name != null) {
                    names.add(name);
                }
                return super.visitNewClass(created, unused);
            }
        }.scan(body, null);
        return names;
    }

    static String quoted(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    static String names(TreeSet<String> names) {
        return names.stream().map(JavaCallSites::quoted).collect(Collectors.joining(",", "[", "]"));
    }

    record Source(CompilationUnitTree unit, String path, SourcePositions positions) {
        int line(long position) {
            return (int) unit.getLineMap().getLineNumber(position);
        }

        String definition(String qualname, String name, String kind, Tree node, TreeSet<String> calls, TreeSet<String> bases) {
            int start = line(positions.getStartPosition(unit, node));
            int end = line(positions.getEndPosition(unit, node));
            // overloads share a name: the line makes the qualname unique
            return "{\"qualname\":" + quoted(path + ":" + qualname + ":" + start) + ",\"name\":" + quoted(name)
                    + ",\"kind\":" + quoted(kind) + ",\"path\":" + quoted(path) + ",\"start\":" + start
                    + ",\"end\":" + end + ",\"calls\":" + names(calls) + ",\"bases\":" + names(bases) + "}";
        }
    }

    static void classDefinitions(Source source, ClassTree cls, String prefix, List<String> out) {
        String name = cls.getSimpleName().toString();
        String qualname = prefix.isEmpty() ? name : prefix + "." + name;
        TreeSet<String> bases = new TreeSet<>();
        List<Tree> supertypes = new ArrayList<>(cls.getImplementsClause());
        if (cls.getExtendsClause() != null) {
            supertypes.add(cls.getExtendsClause());
        }
        for (Tree type : supertypes) {
            String base = simpleName(type);
            if (base != null) {
                bases.add(base);
            }
        }
        out.add(source.definition(qualname, name, "class", cls, new TreeSet<>(), bases));
        for (Tree member : cls.getMembers()) {
            if (member instanceof MethodTree method) {
                String methodName = method.getName().toString();
                if (methodName.equals("<init>") && source.positions.getStartPosition(source.unit, method) < 0) {
                    continue; // a default constructor javac would add has no source
                }
                out.add(source.definition(
                        qualname + "." + methodName, methodName, "function", method,
                        calledNames(method.getBody()), new TreeSet<>()));
            } else if (member instanceof ClassTree nested) {
                classDefinitions(source, nested, qualname, out);
            }
        }
    }

    static List<String> definitions(Path root) throws IOException {
        List<Path> files;
        try (Stream<Path> walk = Files.walk(root)) {
            files = walk.filter(p -> p.toString().endsWith(".java") && Files.isRegularFile(p)).sorted().toList();
        }
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        List<String> out = new ArrayList<>();
        try (StandardJavaFileManager manager = compiler.getStandardFileManager(null, null, null)) {
            Iterable<? extends JavaFileObject> objects = manager.getJavaFileObjectsFromPaths(files);
            JavacTask task = (JavacTask) compiler.getTask(null, manager, null, List.of("-proc:none"), null, objects);
            SourcePositions positions = Trees.instance(task).getSourcePositions();
            for (CompilationUnitTree unit : task.parse()) {
                String path = root.relativize(Path.of(unit.getSourceFile().toUri())).toString().replace('\\', '/');
                Source source = new Source(unit, path, positions);
                for (Tree decl : unit.getTypeDecls()) {
                    if (decl instanceof ClassTree cls) {
                        classDefinitions(source, cls, "", out);
                    }
                }
            }
        }
        return out;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: java JavaCallSites ROOT");
            System.exit(2);
        }
        Path root = Path.of(args[0]).toAbsolutePath().normalize();
        System.out.println("[" + String.join(",\n", definitions(root)) + "]");
    }
}
