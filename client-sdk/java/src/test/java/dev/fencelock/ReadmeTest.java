/*
 * client-sdk/java/README.md names only real things: every method called in its Java blocks or
 * written as `name(` in its text is a public method of the library (or one of the few JDK
 * methods the blocks use), and every FencelockException.CONSTANT exists. test.sh runs the Quick
 * example itself, as written, against the live stack.
 */
package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "FENCELOCK_JAVA_README", matches = ".+")
class ReadmeTest {
  private static final List<Class<?>> kPublic = List.of(FencelockClient.class, FencelockClient.Builder.class,
      Lease.class, FencedTable.class, FencedTable.WriteResult.class, RenewOptions.class, FencelockException.class,
      LockStatus.class, SemaphoreStatus.class, RwLockStatus.class, RwLockStatus.Holder.class);
  // What the blocks call on the JDK and on the reader's own objects (debit, store.write, ...).
  private static final Set<String> kElsewhere = Set.of("getenv", "getConnection", "createStatement", "execute",
      "println", "getMessage", "thenAccept", "name", "toLowerCase", "orElse", "of", "ofSeconds", "ofMinutes",
      "exit", "warn", "write", "debit", "credit", "runReport", "main", "getCause", "get", "commit");

  @Test
  @DisplayName("the README names only methods and codes the library has")
  void namesRealThings() throws Exception {
    String readme = Files.readString(Path.of(System.getenv("FENCELOCK_JAVA_README")));
    Set<String> methods = new HashSet<>();
    for (Class<?> type : kPublic) {
      for (Method method : type.getMethods()) {
        methods.add(method.getName());
      }
    }
    Set<String> named = new TreeSet<>();
    Matcher blocks = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(readme);
    int count = 0;
    while (blocks.find()) {
      ++count;
      Matcher calls = Pattern.compile("\\.([a-z][A-Za-z]*)\\(").matcher(blocks.group(1));
      while (calls.find()) {
        named.add(calls.group(1));
      }
    }
    assertTrue(count >= 4, "Java blocks in the README: " + count);
    Matcher inText = Pattern.compile("`(?:[a-z]+\\.)?([a-z][A-Za-z]*)\\(").matcher(readme);
    while (inText.find()) {
      named.add(inText.group(1));
    }
    Set<String> missing = new TreeSet<>();
    for (String name : named) {
      if (!methods.contains(name) && !kElsewhere.contains(name)) {
        missing.add(name);
      }
    }
    assertEquals(Set.of(), missing, "named in the README but not in the library");
    Matcher constants = Pattern.compile("FencelockException\\.([A-Z_]+)").matcher(readme);
    while (constants.find()) {
      Field field = FencelockException.class.getField(constants.group(1));
      assertTrue(Modifier.isStatic(field.getModifiers()));
    }
  }
}
