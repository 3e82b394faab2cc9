package dev.lameduck.realnacos3;

import com.alibaba.nacos.NacosServerBasicApplication;
import com.alibaba.nacos.NacosServerWebApplication;
import com.alibaba.nacos.core.listener.startup.NacosStartUp;
import com.alibaba.nacos.core.listener.startup.NacosStartUpManager;
import com.alibaba.nacos.sys.env.DeploymentType;
import com.alibaba.nacos.sys.env.EnvUtil;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Nacos 3.1.0 started as its own bootstrap (bootstrap/NacosBootstrap, which the republished
 * artifacts do not include) starts deployment type "server": the core context without a web
 * server, then the server web context (HTTP open API, gRPC) as its child. No console, no MCP registry.
 */
public final class Nacos3Server {
  private Nacos3Server () { }

  /** With -Dlab.exit-on-stdin-eof=true the JVM halts when stdin closes: a test killed hard leaves no server behind. */
  static void exitOnStdinEof () {
    if (!Boolean.getBoolean("lab.exit-on-stdin-eof")) return;
    Thread watch = new Thread(() -> {
      try { while (System.in.read() != -1) { /* keep reading */ } } catch (java.io.IOException ignored) { }
      Runtime.getRuntime().halt(0);
    }, "stdin-lifeline");
    watch.setDaemon(true);
    watch.start();
  }

  public static void main (String[] args) {
    exitOnStdinEof();
    EnvUtil.setDeploymentType(DeploymentType.SERVER);
    NacosStartUpManager.start(NacosStartUp.CORE_START_UP_PHASE);
    ConfigurableApplicationContext core = new SpringApplicationBuilder(NacosServerBasicApplication.class)
        .web(WebApplicationType.NONE).run(args);
    NacosStartUpManager.start(NacosStartUp.WEB_START_UP_PHASE);
    new SpringApplicationBuilder(NacosServerWebApplication.class).parent(core).run(args);
  }
}
