package dev.lameduck.realnacos2;

import com.alibaba.nacos.core.code.ControllerMethodsCache;
import com.alibaba.nacos.sys.filter.NacosTypeExcludeFilter;
import javax.annotation.PostConstruct;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurationExcludeFilter;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.security.servlet.SecurityAutoConfiguration;
import org.springframework.boot.autoconfigure.security.servlet.UserDetailsServiceAutoConfiguration;
import org.springframework.boot.context.TypeExcludeFilter;
import org.springframework.boot.web.servlet.ServletComponentScan;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.ComponentScan.Filter;
import org.springframework.context.annotation.FilterType;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A standalone Nacos 2.3.1 server without the console module (which no Maven repository reached
 * here serves). It scans com.alibaba.nacos as the console's bootstrap does, and does the two
 * things the console otherwise does for it: Spring Security stays unconfigured (the console
 * brings its own security configuration; without it Boot's default answers every call 401), and
 * the controllers are indexed for ControllerMethodsCache (without that DistroFilter finds no
 * handler and answers every v1 call 501).
 */
@SpringBootApplication(exclude = {SecurityAutoConfiguration.class, UserDetailsServiceAutoConfiguration.class},
    excludeName = "org.springframework.boot.actuate.autoconfigure.security.servlet.ManagementWebSecurityAutoConfiguration")
@ComponentScan(basePackages = "com.alibaba.nacos", excludeFilters = {
    @Filter(type = FilterType.CUSTOM, classes = {NacosTypeExcludeFilter.class}),
    @Filter(type = FilterType.CUSTOM, classes = {TypeExcludeFilter.class}),
    @Filter(type = FilterType.CUSTOM, classes = {AutoConfigurationExcludeFilter.class})})
@ServletComponentScan
@EnableScheduling
public class Nacos2Server {
  @Autowired
  private ControllerMethodsCache methodsCache;

  @PostConstruct
  public void indexControllers () {
    methodsCache.initClassMethod("com.alibaba.nacos.core.controller");
    methodsCache.initClassMethod("com.alibaba.nacos.naming.controllers");
    methodsCache.initClassMethod("com.alibaba.nacos.config.server.controller");
  }

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
    SpringApplication.run(Nacos2Server.class, args);
  }
}
