package dev.lameduck.realnacos;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.servlet.ServletComponentScan;
import org.springframework.scheduling.annotation.EnableScheduling;

/** The bootstrap Nacos's console module ships (com.alibaba.nacos.Nacos), which Maven Central does not serve. */
@SpringBootApplication(scanBasePackages = "com.alibaba.nacos")
@ServletComponentScan
@EnableScheduling
public class NacosServer {
  public static void main (String[] args) {
    SpringApplication.run(NacosServer.class, args);
  }
}
