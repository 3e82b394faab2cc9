package dev.lameduck.real.consumer;

import java.io.IOException;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationStartedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Test wiring: with --lab.exit-on-stdin-eof=true the JVM exits when its stdin closes, i.e. when the
 * Node test that started it is gone, however it died (even SIGKILL). No JVM outlives its test.
 */
@Component
public class ParentWatch {
  private final boolean enabled;

  public ParentWatch(@Value("${lab.exit-on-stdin-eof:false}") boolean enabled) {
    this.enabled = enabled;
  }

  @EventListener
  public void onStarted(ApplicationStartedEvent event) {
    if (!enabled) return;
    Thread t = new Thread(() -> {
      try {
        while (System.in.read() != -1) { /* the parent writes nothing; EOF means it is gone */ }
      } catch (IOException e) {
        // a broken pipe: the parent is gone too
      }
      Runtime.getRuntime().halt(0);
    }, "lab-parent-watch");
    t.setDaemon(true);
    t.start();
  }
}
